// Original file: protos/agentloop/v1/agent.proto

import type { ApprovalDecision as _agentloop_v1_ApprovalDecision, ApprovalDecision__Output as _agentloop_v1_ApprovalDecision__Output } from '../../agentloop/v1/ApprovalDecision';

/**
 * Request of Agent.Resume.
 */
export interface ResumeRequest {
  /**
   * The run to continue; required.
   */
  'run_id'?: (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id'?: (string);
  /**
   * For a PAUSED run: one decision per pending tool call.
   */
  'decisions'?: (_agentloop_v1_ApprovalDecision)[];
  /**
   * Idempotency key chosen by the client, as RunRequest.request_id: the
   * same key again for the same run streams the events of the resumption it
   * started (from where that stream began) instead of resuming twice or
   * failing because the run is no longer paused.
   */
  'request_id'?: (string);
}

/**
 * Request of Agent.Resume.
 */
export interface ResumeRequest__Output {
  /**
   * The run to continue; required.
   */
  'run_id': (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id': (string);
  /**
   * For a PAUSED run: one decision per pending tool call.
   */
  'decisions': (_agentloop_v1_ApprovalDecision__Output)[];
  /**
   * Idempotency key chosen by the client, as RunRequest.request_id: the
   * same key again for the same run streams the events of the resumption it
   * started (from where that stream began) instead of resuming twice or
   * failing because the run is no longer paused.
   */
  'request_id': (string);
}
