// Original file: protos/agentloop/v1/common.proto


/**
 * Token accounting reported by the model endpoint.
 */
export interface Usage {
  /**
   * Tokens in the prompt.
   */
  'prompt_tokens'?: (number);
  /**
   * Tokens generated, reasoning included.
   */
  'completion_tokens'?: (number);
  /**
   * prompt_tokens + completion_tokens.
   */
  'total_tokens'?: (number);
  /**
   * Part of completion_tokens spent on reasoning, when reported.
   */
  'reasoning_tokens'?: (number);
}

/**
 * Token accounting reported by the model endpoint.
 */
export interface Usage__Output {
  /**
   * Tokens in the prompt.
   */
  'prompt_tokens': (number);
  /**
   * Tokens generated, reasoning included.
   */
  'completion_tokens': (number);
  /**
   * prompt_tokens + completion_tokens.
   */
  'total_tokens': (number);
  /**
   * Part of completion_tokens spent on reasoning, when reported.
   */
  'reasoning_tokens': (number);
}
