// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.ListRuns.
 */
export interface ListRunsRequest {
  /**
   * The thread; required.
   */
  'thread_id'?: (string);
  /**
   * The caller; must own the thread.
   */
  'user_id'?: (string);
  /**
   * Page size in [1, 1000]; 0 means 100.
   */
  'page_size'?: (number);
  /**
   * Token from a previous response; empty for the first page.
   */
  'page_token'?: (string);
}

/**
 * Request of Agent.ListRuns.
 */
export interface ListRunsRequest__Output {
  /**
   * The thread; required.
   */
  'thread_id': (string);
  /**
   * The caller; must own the thread.
   */
  'user_id': (string);
  /**
   * Page size in [1, 1000]; 0 means 100.
   */
  'page_size': (number);
  /**
   * Token from a previous response; empty for the first page.
   */
  'page_token': (string);
}
