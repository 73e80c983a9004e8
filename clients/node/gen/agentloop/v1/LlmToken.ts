// Original file: protos/agentloop/v1/agent.proto


/**
 * A piece of model output, streamed as it is generated.
 */
export interface LlmToken {
  /**
   * Visible content; empty when this event carries reasoning.
   */
  'token'?: (string);
  /**
   * Reasoning content; empty when this event carries visible content.
   */
  'reasoning_token'?: (string);
  /**
   * Tool rounds completed when the model was called.
   */
  'step'?: (number);
}

/**
 * A piece of model output, streamed as it is generated.
 */
export interface LlmToken__Output {
  /**
   * Visible content; empty when this event carries reasoning.
   */
  'token': (string);
  /**
   * Reasoning content; empty when this event carries visible content.
   */
  'reasoning_token': (string);
  /**
   * Tool rounds completed when the model was called.
   */
  'step': (number);
}
