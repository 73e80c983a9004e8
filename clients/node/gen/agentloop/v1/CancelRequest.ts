// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.Cancel.
 */
export interface CancelRequest {
  /**
   * The run to stop; required.
   */
  'run_id'?: (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id'?: (string);
}

/**
 * Request of Agent.Cancel.
 */
export interface CancelRequest__Output {
  /**
   * The run to stop; required.
   */
  'run_id': (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id': (string);
}
