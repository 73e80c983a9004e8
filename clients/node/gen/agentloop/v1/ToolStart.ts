// Original file: protos/agentloop/v1/agent.proto


/**
 * A tool call has started.
 */
export interface ToolStart {
  /**
   * The tool's name.
   */
  'tool'?: (string);
  /**
   * Arguments as the model wrote them (JSON text).
   */
  'args_json'?: (string);
  /**
   * The tool call id.
   */
  'id'?: (string);
}

/**
 * A tool call has started.
 */
export interface ToolStart__Output {
  /**
   * The tool's name.
   */
  'tool': (string);
  /**
   * Arguments as the model wrote them (JSON text).
   */
  'args_json': (string);
  /**
   * The tool call id.
   */
  'id': (string);
}
