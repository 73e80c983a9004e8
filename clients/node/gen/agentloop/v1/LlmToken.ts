// Original file: protos/agentloop/v1/agent.proto


/**
 * A piece of model output, streamed as it is generated.
 */
export interface LlmToken {
  /**
   * Visible content.
   */
  'token'?: (string);
  /**
   * Reasoning content ("thinking"), when the endpoint exposes it.
   */
  'reasoning_token'?: (string);
  /**
   * Tool rounds completed when the model was called.
   */
  'step'?: (number);
  /**
   * Exactly one kind of text per event.
   */
  'content'?: "token"|"reasoning_token";
}

/**
 * A piece of model output, streamed as it is generated.
 */
export interface LlmToken__Output {
  /**
   * Visible content.
   */
  'token'?: (string);
  /**
   * Reasoning content ("thinking"), when the endpoint exposes it.
   */
  'reasoning_token'?: (string);
  /**
   * Tool rounds completed when the model was called.
   */
  'step': (number);
  /**
   * Exactly one kind of text per event.
   */
  'content'?: "token"|"reasoning_token";
}
