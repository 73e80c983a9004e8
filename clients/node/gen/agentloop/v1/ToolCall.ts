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
   * may be malformed); the ToolService parses and validates it. An endpoint
   * that sends the arguments as a JSON object rather than text gets them
   * written as compact JSON text.
   */
  'arguments_json'?: (string);
  /**
   * What the endpoint sent on this call beyond the standard shape (id, type,
   * function), as the text of a JSON object: for example Gemini's
   * {"extra_content": {"google": {"thought_signature": "..."}}}. Opaque to
   * agentloop, stored with the thread and sent back verbatim, merged into the
   * call, when the conversation goes to the model again (some providers refuse
   * a follow-up without it). Empty when there was nothing more. Bounded by the
   * Reasoner's AGENTLOOP_MAX_PROVIDER_FIELD_BYTES.
   */
  'provider_fields_json'?: (string);
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
   * may be malformed); the ToolService parses and validates it. An endpoint
   * that sends the arguments as a JSON object rather than text gets them
   * written as compact JSON text.
   */
  'arguments_json': (string);
  /**
   * What the endpoint sent on this call beyond the standard shape (id, type,
   * function), as the text of a JSON object: for example Gemini's
   * {"extra_content": {"google": {"thought_signature": "..."}}}. Opaque to
   * agentloop, stored with the thread and sent back verbatim, merged into the
   * call, when the conversation goes to the model again (some providers refuse
   * a follow-up without it). Empty when there was nothing more. Bounded by the
   * Reasoner's AGENTLOOP_MAX_PROVIDER_FIELD_BYTES.
   */
  'provider_fields_json': (string);
}
