// Original file: protos/agentloop/v1/reasoner.proto

import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { ToolSpec as _agentloop_v1_ToolSpec, ToolSpec__Output as _agentloop_v1_ToolSpec__Output } from '../../agentloop/v1/ToolSpec';
import type { ToolChoice as _agentloop_v1_ToolChoice, ToolChoice__Output as _agentloop_v1_ToolChoice__Output } from '../../agentloop/v1/ToolChoice';

/**
 * The parameters of one model call.
 */
export interface CompletionParams {
  /**
   * Name of one of the Reasoner's models (ListModels); empty uses its default
   * (AGENTLOOP_MODEL, or the models file's default). A name the Reasoner does
   * not serve is INVALID_ARGUMENT naming params.model, before any model call;
   * a Reasoner without a models file sends any name to its one endpoint.
   */
  'model'?: (string);
  /**
   * The conversation so far; at least one message, each with a role.
   */
  'messages'?: (_agentloop_v1_Message)[];
  /**
   * Tools the model may call; empty offers none.
   */
  'tools'?: (_agentloop_v1_ToolSpec)[];
  /**
   * Tool-use policy; unset means auto when tools are offered.
   */
  'tool_choice'?: (_agentloop_v1_ToolChoice | null);
  /**
   * Optional response_format object as JSON text, passed through verbatim
   * (for example {"type":"json_object"}).
   */
  'response_format_json'?: (string);
  /**
   * Sampling temperature in [0, 2]; unset uses the endpoint's default.
   */
  'temperature'?: (number | string);
  /**
   * Upper bound on generated tokens; unset uses the endpoint's default.
   */
  'max_tokens'?: (number);
  /**
   * Whether the model may emit several tool calls in one message; unset
   * uses the endpoint's default.
   */
  'parallel_tool_calls'?: (boolean);
  '_temperature'?: "temperature";
  '_max_tokens'?: "max_tokens";
  '_parallel_tool_calls'?: "parallel_tool_calls";
}

/**
 * The parameters of one model call.
 */
export interface CompletionParams__Output {
  /**
   * Name of one of the Reasoner's models (ListModels); empty uses its default
   * (AGENTLOOP_MODEL, or the models file's default). A name the Reasoner does
   * not serve is INVALID_ARGUMENT naming params.model, before any model call;
   * a Reasoner without a models file sends any name to its one endpoint.
   */
  'model': (string);
  /**
   * The conversation so far; at least one message, each with a role.
   */
  'messages': (_agentloop_v1_Message__Output)[];
  /**
   * Tools the model may call; empty offers none.
   */
  'tools': (_agentloop_v1_ToolSpec__Output)[];
  /**
   * Tool-use policy; unset means auto when tools are offered.
   */
  'tool_choice': (_agentloop_v1_ToolChoice__Output | null);
  /**
   * Optional response_format object as JSON text, passed through verbatim
   * (for example {"type":"json_object"}).
   */
  'response_format_json': (string);
  /**
   * Sampling temperature in [0, 2]; unset uses the endpoint's default.
   */
  'temperature'?: (number);
  /**
   * Upper bound on generated tokens; unset uses the endpoint's default.
   */
  'max_tokens'?: (number);
  /**
   * Whether the model may emit several tool calls in one message; unset
   * uses the endpoint's default.
   */
  'parallel_tool_calls'?: (boolean);
  '_temperature'?: "temperature";
  '_max_tokens'?: "max_tokens";
  '_parallel_tool_calls'?: "parallel_tool_calls";
}
