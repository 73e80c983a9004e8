// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.GetThread.
 */
export interface GetThreadRequest {
  /**
   * The thread to read; required.
   */
  'thread_id'?: (string);
  /**
   * The caller; must own the thread.
   */
  'user_id'?: (string);
  /**
   * Read the state as of this checkpoint instead of the latest. Optional.
   */
  'checkpoint_id'?: (string);
  /**
   * Messages per page in [1, 1000]; 0 means 100. A page also ends early
   * once the response would pass 3.5 MiB, so it fits the 4 MiB default receive
   * limit of gRPC clients; a message too big for one page is cut and
   * continued on the next (first_message_continued).
   */
  'page_size'?: (number);
  /**
   * Token from a previous response to the same thread, user and
   * checkpoint_id; empty for the first page. Opaque: anything else is
   * INVALID_ARGUMENT.
   */
  'page_token'?: (string);
}

/**
 * Request of Agent.GetThread.
 */
export interface GetThreadRequest__Output {
  /**
   * The thread to read; required.
   */
  'thread_id': (string);
  /**
   * The caller; must own the thread.
   */
  'user_id': (string);
  /**
   * Read the state as of this checkpoint instead of the latest. Optional.
   */
  'checkpoint_id': (string);
  /**
   * Messages per page in [1, 1000]; 0 means 100. A page also ends early
   * once the response would pass 3.5 MiB, so it fits the 4 MiB default receive
   * limit of gRPC clients; a message too big for one page is cut and
   * continued on the next (first_message_continued).
   */
  'page_size': (number);
  /**
   * Token from a previous response to the same thread, user and
   * checkpoint_id; empty for the first page. Opaque: anything else is
   * INVALID_ARGUMENT.
   */
  'page_token': (string);
}
