// Original file: protos/agentloop/v1/reasoner.proto

import type { StepResult as _agentloop_v1_StepResult, StepResult__Output as _agentloop_v1_StepResult__Output } from '../../agentloop/v1/StepResult';

/**
 * Response of Reasoner.Step.
 */
export interface StepResponse {
  /**
   * The assistant's answer.
   */
  'result'?: (_agentloop_v1_StepResult | null);
}

/**
 * Response of Reasoner.Step.
 */
export interface StepResponse__Output {
  /**
   * The assistant's answer.
   */
  'result': (_agentloop_v1_StepResult__Output | null);
}
