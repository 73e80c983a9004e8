// Original file: protos/agentloop/v1/agent.proto

import type { Memory as _agentloop_v1_Memory, Memory__Output as _agentloop_v1_Memory__Output } from '../../agentloop/v1/Memory';

/**
 * Response of Agent.ListMemories.
 */
export interface ListMemoriesResponse {
  /**
   * The memories, newest first.
   */
  'memories'?: (_agentloop_v1_Memory)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token'?: (string);
}

/**
 * Response of Agent.ListMemories.
 */
export interface ListMemoriesResponse__Output {
  /**
   * The memories, newest first.
   */
  'memories': (_agentloop_v1_Memory__Output)[];
  /**
   * Token for the next page (it continues after the last item of this one,
   * whatever was added or changed since); empty on the last page.
   */
  'next_page_token': (string);
}
