// Original file: protos/agentloop/v1/common.proto

import type { Role as _agentloop_v1_Role, Role__Output as _agentloop_v1_Role__Output } from '../../agentloop/v1/Role';
import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from '../../agentloop/v1/ToolCall';

/**
 * One message of a conversation, in the OpenAI chat-completions shape.
 */
export interface Message {
  /**
   * Author of the message.
   */
  'role'?: (_agentloop_v1_Role);
  /**
   * Visible text. May be empty for an assistant message that only calls tools.
   */
  'content'?: (string);
  /**
   * Reasoning text ("thinking") returned by endpoints that expose it
   * (reasoning_content). Never sent back to the model.
   */
  'reasoning_content'?: (string);
  /**
   * Tool calls of an assistant message, in the order the model emitted them.
   */
  'tool_calls'?: (_agentloop_v1_ToolCall)[];
  /**
   * For ROLE_TOOL: the ToolCall.id this message answers.
   */
  'tool_call_id'?: (string);
  /**
   * Optional participant or tool name.
   */
  'name'?: (string);
  /**
   * For ROLE_ASSISTANT: what the endpoint sent on the message beyond the
   * standard shape, as the text of a JSON object (for example OpenRouter's
   * {"reasoning_details": [...]}, encrypted reasoning some models need back).
   * Opaque to agentloop, stored with the thread and sent back verbatim, merged
   * into the message, when the conversation goes to the model again. Empty
   * when there was nothing more. Bounded by the Reasoner's
   * AGENTLOOP_MAX_PROVIDER_FIELD_BYTES.
   */
  'provider_fields_json'?: (string);
}

/**
 * One message of a conversation, in the OpenAI chat-completions shape.
 */
export interface Message__Output {
  /**
   * Author of the message.
   */
  'role': (_agentloop_v1_Role__Output);
  /**
   * Visible text. May be empty for an assistant message that only calls tools.
   */
  'content': (string);
  /**
   * Reasoning text ("thinking") returned by endpoints that expose it
   * (reasoning_content). Never sent back to the model.
   */
  'reasoning_content': (string);
  /**
   * Tool calls of an assistant message, in the order the model emitted them.
   */
  'tool_calls': (_agentloop_v1_ToolCall__Output)[];
  /**
   * For ROLE_TOOL: the ToolCall.id this message answers.
   */
  'tool_call_id': (string);
  /**
   * Optional participant or tool name.
   */
  'name': (string);
  /**
   * For ROLE_ASSISTANT: what the endpoint sent on the message beyond the
   * standard shape, as the text of a JSON object (for example OpenRouter's
   * {"reasoning_details": [...]}, encrypted reasoning some models need back).
   * Opaque to agentloop, stored with the thread and sent back verbatim, merged
   * into the message, when the conversation goes to the model again. Empty
   * when there was nothing more. Bounded by the Reasoner's
   * AGENTLOOP_MAX_PROVIDER_FIELD_BYTES.
   */
  'provider_fields_json': (string);
}
