// Original file: protos/agentloop/v1/common.proto

import type { NextStepTrigger as _agentloop_v1_NextStepTrigger, NextStepTrigger__Output as _agentloop_v1_NextStepTrigger__Output } from '../../agentloop/v1/NextStepTrigger';

/**
 * One flow-guidance rule of a tool.
 */
export interface NextStepRule {
  /**
   * Short name of the suggested next step, for example "run_sql".
   */
  'next_step'?: (string);
  /**
   * The hint given to the model, for example "The query is valid: run it with sql_query."
   */
  'hint'?: (string);
  /**
   * When the rule applies.
   */
  'trigger'?: (_agentloop_v1_NextStepTrigger);
}

/**
 * One flow-guidance rule of a tool.
 */
export interface NextStepRule__Output {
  /**
   * Short name of the suggested next step, for example "run_sql".
   */
  'next_step': (string);
  /**
   * The hint given to the model, for example "The query is valid: run it with sql_query."
   */
  'hint': (string);
  /**
   * When the rule applies.
   */
  'trigger': (_agentloop_v1_NextStepTrigger__Output);
}
