// Original file: protos/agentloop/v1/agent.proto

import type { RunEvent as _agentloop_v1_RunEvent, RunEvent__Output as _agentloop_v1_RunEvent__Output } from '../../agentloop/v1/RunEvent';

/**
 * One event of Agent.Resume.
 */
export interface ResumeResponse {
  /**
   * The event.
   */
  'event'?: (_agentloop_v1_RunEvent | null);
}

/**
 * One event of Agent.Resume.
 */
export interface ResumeResponse__Output {
  /**
   * The event.
   */
  'event': (_agentloop_v1_RunEvent__Output | null);
}
