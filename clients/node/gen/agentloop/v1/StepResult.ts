// Original file: protos/agentloop/v1/reasoner.proto

import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from '../../agentloop/v1/Usage';
import type { ModelFallback as _agentloop_v1_ModelFallback, ModelFallback__Output as _agentloop_v1_ModelFallback__Output } from '../../agentloop/v1/ModelFallback';

/**
 * The complete outcome of one model call.
 */
export interface StepResult {
  /**
   * The assistant message, tool calls assembled.
   */
  'message'?: (_agentloop_v1_Message | null);
  /**
   * Why generation ended: "stop", "tool_calls", "length", "content_filter"
   * or whatever else the endpoint reports.
   */
  'finish_reason'?: (string);
  /**
   * Token accounting, when the endpoint reports it.
   */
  'usage'?: (_agentloop_v1_Usage | null);
  /**
   * The model that answered, as the endpoint names it.
   */
  'model'?: (string);
  /**
   * The name of the Reasoner's model that answered (CompletionParams.model,
   * or its default, or the fallback that answered in its place).
   */
  'answered_by'?: (string);
  /**
   * The models tried before answered_by, in order, each with why it failed;
   * empty when the model asked for answered.
   */
  'fallbacks'?: (_agentloop_v1_ModelFallback)[];
}

/**
 * The complete outcome of one model call.
 */
export interface StepResult__Output {
  /**
   * The assistant message, tool calls assembled.
   */
  'message': (_agentloop_v1_Message__Output | null);
  /**
   * Why generation ended: "stop", "tool_calls", "length", "content_filter"
   * or whatever else the endpoint reports.
   */
  'finish_reason': (string);
  /**
   * Token accounting, when the endpoint reports it.
   */
  'usage': (_agentloop_v1_Usage__Output | null);
  /**
   * The model that answered, as the endpoint names it.
   */
  'model': (string);
  /**
   * The name of the Reasoner's model that answered (CompletionParams.model,
   * or its default, or the fallback that answered in its place).
   */
  'answered_by': (string);
  /**
   * The models tried before answered_by, in order, each with why it failed;
   * empty when the model asked for answered.
   */
  'fallbacks': (_agentloop_v1_ModelFallback__Output)[];
}
