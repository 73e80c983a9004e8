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
   * Page size in [1, 1000]; 0 means 100. A page also ends early once the
   * response would pass 3.5 MiB (under the 4 MiB default receive limit of gRPC
   * clients).
   */
  'page_size'?: (number);
  /**
   * Token from a previous response to the same request (thread and user); empty for
   * the first page. Opaque: anything else is INVALID_ARGUMENT.
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
   * Page size in [1, 1000]; 0 means 100. A page also ends early once the
   * response would pass 3.5 MiB (under the 4 MiB default receive limit of gRPC
   * clients).
   */
  'page_size': (number);
  /**
   * Token from a previous response to the same request (thread and user); empty for
   * the first page. Opaque: anything else is INVALID_ARGUMENT.
   */
  'page_token': (string);
}
