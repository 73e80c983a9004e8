// Original file: protos/agentloop/v1/common.proto


/**
 * One flow-guidance rule of a tool.
 */
export interface NextStepRule {
  /**
   * When the rule applies: "success" or "error".
   */
  'on'?: (string);
  /**
   * Short name of the suggested next step, for example "run_sql".
   */
  'next_step'?: (string);
  /**
   * The hint given to the model, for example "The query is valid: run it with sql_query."
   */
  'hint'?: (string);
}

/**
 * One flow-guidance rule of a tool.
 */
export interface NextStepRule__Output {
  /**
   * When the rule applies: "success" or "error".
   */
  'on': (string);
  /**
   * Short name of the suggested next step, for example "run_sql".
   */
  'next_step': (string);
  /**
   * The hint given to the model, for example "The query is valid: run it with sql_query."
   */
  'hint': (string);
}
