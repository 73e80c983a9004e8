// Original file: protos/agentloop/v1/common.proto


/**
 * Values the gateway hands the ToolService for injected parameters.
 */
export interface InjectedContext {
  /**
   * The user the run belongs to.
   */
  'user_id'?: (string);
  /**
   * The thread of the run.
   */
  'thread_id'?: (string);
  /**
   * The run.
   */
  'run_id'?: (string);
  /**
   * The conversation so far (system prompt excluded), as JSON text of a list
   * of {"role", "content", ...} objects.
   */
  'conversation_json'?: (string);
  /**
   * Run metadata as a JSON object: step, max_steps, tools_used, llm_calls.
   */
  'run_metadata_json'?: (string);
}

/**
 * Values the gateway hands the ToolService for injected parameters.
 */
export interface InjectedContext__Output {
  /**
   * The user the run belongs to.
   */
  'user_id': (string);
  /**
   * The thread of the run.
   */
  'thread_id': (string);
  /**
   * The run.
   */
  'run_id': (string);
  /**
   * The conversation so far (system prompt excluded), as JSON text of a list
   * of {"role", "content", ...} objects.
   */
  'conversation_json': (string);
  /**
   * Run metadata as a JSON object: step, max_steps, tools_used, llm_calls.
   */
  'run_metadata_json': (string);
}
