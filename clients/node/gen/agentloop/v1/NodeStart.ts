// Original file: protos/agentloop/v1/agent.proto


/**
 * A node of the loop's graph has started.
 */
export interface NodeStart {
  /**
   * Node name: init_state, agent, tools or finalize.
   */
  'node'?: (string);
  /**
   * Tool rounds completed when the node started.
   */
  'step'?: (number);
}

/**
 * A node of the loop's graph has started.
 */
export interface NodeStart__Output {
  /**
   * Node name: init_state, agent, tools or finalize.
   */
  'node': (string);
  /**
   * Tool rounds completed when the node started.
   */
  'step': (number);
}
