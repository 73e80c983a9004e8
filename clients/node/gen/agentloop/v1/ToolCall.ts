// Original file: protos/agentloop/v1/common.proto


/**
 * One function call requested by the model.
 */
export interface ToolCall {
  /**
   * Identifier chosen by the model endpoint; the matching tool result carries
   * it back, and tools receive it as an idempotency key.
   */
  'id'?: (string);
  /**
   * Name of the tool to run, as listed by ToolService.ListTools.
   */
  'name'?: (string);
  /**
   * Arguments as the JSON text the model produced. It is kept verbatim (it
   * may be malformed); the ToolService parses and validates it.
   */
  'arguments_json'?: (string);
}

/**
 * One function call requested by the model.
 */
export interface ToolCall__Output {
  /**
   * Identifier chosen by the model endpoint; the matching tool result carries
   * it back, and tools receive it as an idempotency key.
   */
  'id': (string);
  /**
   * Name of the tool to run, as listed by ToolService.ListTools.
   */
  'name': (string);
  /**
   * Arguments as the JSON text the model produced. It is kept verbatim (it
   * may be malformed); the ToolService parses and validates it.
   */
  'arguments_json': (string);
}
