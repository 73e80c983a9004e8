// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.ForkThread.
 */
export interface ForkThreadRequest {
  /**
   * The thread to copy; required.
   */
  'thread_id'?: (string);
  /**
   * The caller; must own the thread.
   */
  'user_id'?: (string);
  /**
   * The checkpoint ("<run_id>:<index>", from ListCheckpoints) whose
   * conversation the new thread starts with; required.
   */
  'checkpoint_id'?: (string);
  /**
   * Id of the new thread; empty lets the gateway choose one.
   */
  'new_thread_id'?: (string);
}

/**
 * Request of Agent.ForkThread.
 */
export interface ForkThreadRequest__Output {
  /**
   * The thread to copy; required.
   */
  'thread_id': (string);
  /**
   * The caller; must own the thread.
   */
  'user_id': (string);
  /**
   * The checkpoint ("<run_id>:<index>", from ListCheckpoints) whose
   * conversation the new thread starts with; required.
   */
  'checkpoint_id': (string);
  /**
   * Id of the new thread; empty lets the gateway choose one.
   */
  'new_thread_id': (string);
}
