// Original file: protos/agentloop/v1/reasoner.proto


/**
 * A model of a step that failed before another model answered in its place.
 */
export interface ModelFallback {
  /**
   * The name of the Reasoner's model that failed.
   */
  'model'?: (string);
  /**
   * Status code name of its last error, for example UNAVAILABLE.
   */
  'code'?: (string);
  /**
   * Its last error, written for a person.
   */
  'message'?: (string);
}

/**
 * A model of a step that failed before another model answered in its place.
 */
export interface ModelFallback__Output {
  /**
   * The name of the Reasoner's model that failed.
   */
  'model': (string);
  /**
   * Status code name of its last error, for example UNAVAILABLE.
   */
  'code': (string);
  /**
   * Its last error, written for a person.
   */
  'message': (string);
}
