// Original file: protos/agentloop/v1/reasoner.proto


/**
 * One model a Reasoner serves.
 */
export interface ModelInfo {
  /**
   * The name a step chooses it by.
   */
  'name'?: (string);
  /**
   * Its wire protocol: "chat" (chat completions) or "responses" (the
   * Responses API).
   */
  'protocol'?: (string);
  /**
   * The models tried in order when it fails with a retryable error.
   */
  'fallback'?: (string)[];
}

/**
 * One model a Reasoner serves.
 */
export interface ModelInfo__Output {
  /**
   * The name a step chooses it by.
   */
  'name': (string);
  /**
   * Its wire protocol: "chat" (chat completions) or "responses" (the
   * Responses API).
   */
  'protocol': (string);
  /**
   * The models tried in order when it fails with a retryable error.
   */
  'fallback': (string)[];
}
