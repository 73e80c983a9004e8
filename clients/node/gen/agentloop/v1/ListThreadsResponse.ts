// Original file: protos/agentloop/v1/agent.proto

import type { ThreadSummary as _agentloop_v1_ThreadSummary, ThreadSummary__Output as _agentloop_v1_ThreadSummary__Output } from '../../agentloop/v1/ThreadSummary';

/**
 * Response of Agent.ListThreads.
 */
export interface ListThreadsResponse {
  /**
   * Threads, most recently updated first.
   */
  'threads'?: (_agentloop_v1_ThreadSummary)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token'?: (string);
}

/**
 * Response of Agent.ListThreads.
 */
export interface ListThreadsResponse__Output {
  /**
   * Threads, most recently updated first.
   */
  'threads': (_agentloop_v1_ThreadSummary__Output)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token': (string);
}
