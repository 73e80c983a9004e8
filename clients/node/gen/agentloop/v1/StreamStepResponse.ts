// Original file: protos/agentloop/v1/reasoner.proto

import type { StepResult as _agentloop_v1_StepResult, StepResult__Output as _agentloop_v1_StepResult__Output } from '../../agentloop/v1/StepResult';

/**
 * One event of a streamed step.
 */
export interface StreamStepResponse {
  /**
   * A piece of visible content, in order.
   */
  'token'?: (string);
  /**
   * A piece of reasoning content, in order.
   */
  'reasoning_token'?: (string);
  /**
   * The final assistant message; always the last event of the stream.
   */
  'result'?: (_agentloop_v1_StepResult | null);
  /**
   * Exactly one of: a token, a reasoning token, or the final result (last).
   */
  'event'?: "token"|"reasoning_token"|"result";
}

/**
 * One event of a streamed step.
 */
export interface StreamStepResponse__Output {
  /**
   * A piece of visible content, in order.
   */
  'token'?: (string);
  /**
   * A piece of reasoning content, in order.
   */
  'reasoning_token'?: (string);
  /**
   * The final assistant message; always the last event of the stream.
   */
  'result'?: (_agentloop_v1_StepResult__Output | null);
  /**
   * Exactly one of: a token, a reasoning token, or the final result (last).
   */
  'event'?: "token"|"reasoning_token"|"result";
}
