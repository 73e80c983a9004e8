// Original file: protos/agentloop/v1/agent.proto

import type { RunStatus as _agentloop_v1_RunStatus, RunStatus__Output as _agentloop_v1_RunStatus__Output } from '../../agentloop/v1/RunStatus';

/**
 * Response of Agent.Cancel.
 */
export interface CancelResponse {
  /**
   * Status after the request: CANCELLED when the run was stopped here, the
   * run's final status when it had already ended, RUNNING while another
   * gateway is still reaching its next safe point.
   */
  'status'?: (_agentloop_v1_RunStatus);
}

/**
 * Response of Agent.Cancel.
 */
export interface CancelResponse__Output {
  /**
   * Status after the request: CANCELLED when the run was stopped here, the
   * run's final status when it had already ended, RUNNING while another
   * gateway is still reaching its next safe point.
   */
  'status': (_agentloop_v1_RunStatus__Output);
}
