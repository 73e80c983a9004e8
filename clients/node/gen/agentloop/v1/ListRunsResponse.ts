// Original file: protos/agentloop/v1/agent.proto

import type { RunInfo as _agentloop_v1_RunInfo, RunInfo__Output as _agentloop_v1_RunInfo__Output } from '../../agentloop/v1/RunInfo';

/**
 * Response of Agent.ListRuns.
 */
export interface ListRunsResponse {
  /**
   * Runs, newest first, each as of its latest checkpoint.
   */
  'runs'?: (_agentloop_v1_RunInfo)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token'?: (string);
}

/**
 * Response of Agent.ListRuns.
 */
export interface ListRunsResponse__Output {
  /**
   * Runs, newest first, each as of its latest checkpoint.
   */
  'runs': (_agentloop_v1_RunInfo__Output)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token': (string);
}
