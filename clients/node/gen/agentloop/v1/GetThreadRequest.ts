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
}
