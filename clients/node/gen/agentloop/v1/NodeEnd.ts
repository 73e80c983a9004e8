// Original file: protos/agentloop/v1/agent.proto


/**
 * A node of the loop's graph has finished.
 */
export interface NodeEnd {
  /**
   * Node name.
   */
  'node'?: (string);
  /**
   * Tool rounds completed when the node ended.
   */
  'step'?: (number);
  /**
   * Time spent in the node, in milliseconds.
   */
  'duration_ms'?: (number | string);
}

/**
 * A node of the loop's graph has finished.
 */
export interface NodeEnd__Output {
  /**
   * Node name.
   */
  'node': (string);
  /**
   * Tool rounds completed when the node ended.
   */
  'step': (number);
  /**
   * Time spent in the node, in milliseconds.
   */
  'duration_ms': (number);
}
