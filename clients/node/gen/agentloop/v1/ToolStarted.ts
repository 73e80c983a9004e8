// Original file: protos/agentloop/v1/tools.proto


/**
 * Announces that one call of the batch has started.
 */
export interface ToolStarted {
  /**
   * The call's id.
   */
  'tool_call_id'?: (string);
  /**
   * The tool's name.
   */
  'name'?: (string);
  /**
   * The arguments as received.
   */
  'arguments_json'?: (string);
}

/**
 * Announces that one call of the batch has started.
 */
export interface ToolStarted__Output {
  /**
   * The call's id.
   */
  'tool_call_id': (string);
  /**
   * The tool's name.
   */
  'name': (string);
  /**
   * The arguments as received.
   */
  'arguments_json': (string);
}
