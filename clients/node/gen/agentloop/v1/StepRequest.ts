// Original file: protos/agentloop/v1/reasoner.proto

import type { CompletionParams as _agentloop_v1_CompletionParams, CompletionParams__Output as _agentloop_v1_CompletionParams__Output } from '../../agentloop/v1/CompletionParams';

/**
 * Request of Reasoner.Step.
 */
export interface StepRequest {
  /**
   * The call to make.
   */
  'params'?: (_agentloop_v1_CompletionParams | null);
}

/**
 * Request of Reasoner.Step.
 */
export interface StepRequest__Output {
  /**
   * The call to make.
   */
  'params': (_agentloop_v1_CompletionParams__Output | null);
}
