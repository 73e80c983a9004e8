// Original file: protos/agentloop/v1/agent.proto


/**
 * A run ended because something failed and could not be retried.
 */
export interface RunError {
  /**
   * gRPC status code name of the cause, for example "UNAVAILABLE".
   */
  'code'?: (string);
  /**
   * What failed, written for a person.
   */
  'message'?: (string);
  /**
   * The node that was running.
   */
  'node'?: (string);
}

/**
 * A run ended because something failed and could not be retried.
 */
export interface RunError__Output {
  /**
   * gRPC status code name of the cause, for example "UNAVAILABLE".
   */
  'code': (string);
  /**
   * What failed, written for a person.
   */
  'message': (string);
  /**
   * The node that was running.
   */
  'node': (string);
}
