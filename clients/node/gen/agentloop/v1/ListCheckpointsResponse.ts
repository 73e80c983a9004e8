// Original file: protos/agentloop/v1/agent.proto

import type { Checkpoint as _agentloop_v1_Checkpoint, Checkpoint__Output as _agentloop_v1_Checkpoint__Output } from '../../agentloop/v1/Checkpoint';

/**
 * Response of Agent.ListCheckpoints.
 */
export interface ListCheckpointsResponse {
  /**
   * Checkpoints, oldest first.
   */
  'checkpoints'?: (_agentloop_v1_Checkpoint)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token'?: (string);
}

/**
 * Response of Agent.ListCheckpoints.
 */
export interface ListCheckpointsResponse__Output {
  /**
   * Checkpoints, oldest first.
   */
  'checkpoints': (_agentloop_v1_Checkpoint__Output)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token': (string);
}
