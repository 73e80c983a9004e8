// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.ListThreads.
 */
export interface ListThreadsRequest {
  /**
   * The caller.
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
 * Request of Agent.ListThreads.
 */
export interface ListThreadsRequest__Output {
  /**
   * The caller.
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
