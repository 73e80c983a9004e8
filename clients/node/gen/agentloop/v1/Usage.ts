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
   * Part of completion_tokens spent on reasoning, when reported
   * (completion_tokens_details.reasoning_tokens, or a provider's variant).
   */
  'reasoning_tokens'?: (number);
  /**
   * Part of prompt_tokens read from the provider's prompt cache, when reported
   * (prompt_tokens_details.cached_tokens, DeepSeek's prompt_cache_hit_tokens,
   * or another provider's variant). Providers bill these at a lower rate.
   */
  'cached_prompt_tokens'?: (number);
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
   * Part of completion_tokens spent on reasoning, when reported
   * (completion_tokens_details.reasoning_tokens, or a provider's variant).
   */
  'reasoning_tokens': (number);
  /**
   * Part of prompt_tokens read from the provider's prompt cache, when reported
   * (prompt_tokens_details.cached_tokens, DeepSeek's prompt_cache_hit_tokens,
   * or another provider's variant). Providers bill these at a lower rate.
   */
  'cached_prompt_tokens': (number);
}
