// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.ListCheckpoints.
 */
export interface ListCheckpointsRequest {
  /**
   * The thread; required.
   */
  'thread_id'?: (string);
  /**
   * The caller; must own the thread.
   */
  'user_id'?: (string);
  /**
   * Only this run's checkpoints. Optional.
   */
  'run_id'?: (string);
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
 * Request of Agent.ListCheckpoints.
 */
export interface ListCheckpointsRequest__Output {
  /**
   * The thread; required.
   */
  'thread_id': (string);
  /**
   * The caller; must own the thread.
   */
  'user_id': (string);
  /**
   * Only this run's checkpoints. Optional.
   */
  'run_id': (string);
  /**
   * Page size in [1, 1000]; 0 means 100.
   */
  'page_size': (number);
  /**
   * Token from a previous response; empty for the first page.
   */
  'page_token': (string);
}
