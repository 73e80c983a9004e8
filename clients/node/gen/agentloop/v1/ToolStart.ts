// Original file: protos/agentloop/v1/agent.proto


/**
 * A tool call has started.
 */
export interface ToolStart {
  /**
   * The tool's name.
   */
  'name'?: (string);
  /**
   * Arguments as the model wrote them (JSON text, verbatim: it may be
   * malformed, which the tool's result then reports).
   */
  'arguments_json'?: (string);
  /**
   * The ToolCall.id of the call.
   */
  'tool_call_id'?: (string);
}

/**
 * A tool call has started.
 */
export interface ToolStart__Output {
  /**
   * The tool's name.
   */
  'name': (string);
  /**
   * Arguments as the model wrote them (JSON text, verbatim: it may be
   * malformed, which the tool's result then reports).
   */
  'arguments_json': (string);
  /**
   * The ToolCall.id of the call.
   */
  'tool_call_id': (string);
}
