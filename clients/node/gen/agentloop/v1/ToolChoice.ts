// Original file: protos/agentloop/v1/common.proto

import type { ToolChoiceMode as _agentloop_v1_ToolChoiceMode, ToolChoiceMode__Output as _agentloop_v1_ToolChoiceMode__Output } from '../../agentloop/v1/ToolChoiceMode';

/**
 * Tool-use policy for one model call.
 */
export interface ToolChoice {
  /**
   * A general policy.
   */
  'mode'?: (_agentloop_v1_ToolChoiceMode);
  /**
   * The name of the one tool the model must call.
   */
  'function_name'?: (string);
  /**
   * Either a mode or one tool the model must call.
   */
  'choice'?: "mode"|"function_name";
}

/**
 * Tool-use policy for one model call.
 */
export interface ToolChoice__Output {
  /**
   * A general policy.
   */
  'mode'?: (_agentloop_v1_ToolChoiceMode__Output);
  /**
   * The name of the one tool the model must call.
   */
  'function_name'?: (string);
  /**
   * Either a mode or one tool the model must call.
   */
  'choice'?: "mode"|"function_name";
}
