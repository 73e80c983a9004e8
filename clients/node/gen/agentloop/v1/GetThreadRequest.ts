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
   * once it holds 1 MiB of messages, so a response stays far below the 4 MiB
   * default receive limit of gRPC clients.
   */
  'page_size'?: (number);
  /**
   * Token from a previous response; empty for the first page.
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
   * once it holds 1 MiB of messages, so a response stays far below the 4 MiB
   * default receive limit of gRPC clients.
   */
  'page_size': (number);
  /**
   * Token from a previous response; empty for the first page.
   */
  'page_token': (string);
}
