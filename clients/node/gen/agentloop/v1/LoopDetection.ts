// Original file: protos/agentloop/v1/agent.proto


/**
 * How the gateway decides that the model is going in circles.
 */
export interface LoopDetection {
  /**
   * Turn loop detection off for the run.
   */
  'disabled'?: (boolean);
  /**
   * Deprecated and ignored: calls are now compared by meaning (parsed JSON
   * arguments, identical results), not by character similarity. Still
   * checked to be in [0, 1] so that existing requests keep their meaning.
   * @deprecated
   */
  'args_similarity'?: (number | string);
  /**
   * Deprecated and ignored, like args_similarity; in [0, 1].
   * @deprecated
   */
  'result_similarity'?: (number | string);
  /**
   * Longest cycle of tool rounds detected (1 = the same round twice in a
   * row, 2 = A,B,A,B, 3 = A,B,C,A,B,C); 0 means 3. At most 5.
   */
  'max_period'?: (number);
}

/**
 * How the gateway decides that the model is going in circles.
 */
export interface LoopDetection__Output {
  /**
   * Turn loop detection off for the run.
   */
  'disabled': (boolean);
  /**
   * Deprecated and ignored: calls are now compared by meaning (parsed JSON
   * arguments, identical results), not by character similarity. Still
   * checked to be in [0, 1] so that existing requests keep their meaning.
   * @deprecated
   */
  'args_similarity': (number);
  /**
   * Deprecated and ignored, like args_similarity; in [0, 1].
   * @deprecated
   */
  'result_similarity': (number);
  /**
   * Longest cycle of tool rounds detected (1 = the same round twice in a
   * row, 2 = A,B,A,B, 3 = A,B,C,A,B,C); 0 means 3. At most 5.
   */
  'max_period': (number);
}
