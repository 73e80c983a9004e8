// Original file: protos/agentloop/v1/common.proto

import type { NextStepRule as _agentloop_v1_NextStepRule, NextStepRule__Output as _agentloop_v1_NextStepRule__Output } from '../../agentloop/v1/NextStepRule';
import type { LoopPolicy as _agentloop_v1_LoopPolicy, LoopPolicy__Output as _agentloop_v1_LoopPolicy__Output } from '../../agentloop/v1/LoopPolicy';

/**
 * A tool offered to the model: its name, what it does and its arguments.
 */
export interface ToolSpec {
  /**
   * Unique tool name ([a-zA-Z0-9_-], at most 64 characters).
   */
  'name'?: (string);
  /**
   * What the tool does and when to use it; the model reads this.
   */
  'description'?: (string);
  /**
   * JSON Schema (draft 2020-12 subset) of the arguments the MODEL may set,
   * as JSON text. Injected parameters are not in it.
   */
  'parameters_json_schema'?: (string);
  /**
   * Flow guidance: what the model should do next after this tool succeeds or
   * fails. The gateway turns the matching rule into a one-time hint.
   */
  'next_steps'?: (_agentloop_v1_NextStepRule)[];
  /**
   * Parameters the gateway fills from the run (see InjectedValue), hidden
   * from the model; a model that sets one gets an INVALID_ARGUMENTS result.
   */
  'injected_parameters'?: (string)[];
  /**
   * Calls of this tool wait for a human decision (Agent.Resume) before running.
   */
  'requires_approval'?: (boolean);
  /**
   * How loop detection judges repeated calls of this tool; unset = the
   * defaults (every argument counts, results must be identical, no repeat is
   * expected). The gateway's AGENTLOOP_LOOP_POLICIES replaces it per tool.
   */
  'loop_policy'?: (_agentloop_v1_LoopPolicy | null);
}

/**
 * A tool offered to the model: its name, what it does and its arguments.
 */
export interface ToolSpec__Output {
  /**
   * Unique tool name ([a-zA-Z0-9_-], at most 64 characters).
   */
  'name': (string);
  /**
   * What the tool does and when to use it; the model reads this.
   */
  'description': (string);
  /**
   * JSON Schema (draft 2020-12 subset) of the arguments the MODEL may set,
   * as JSON text. Injected parameters are not in it.
   */
  'parameters_json_schema': (string);
  /**
   * Flow guidance: what the model should do next after this tool succeeds or
   * fails. The gateway turns the matching rule into a one-time hint.
   */
  'next_steps': (_agentloop_v1_NextStepRule__Output)[];
  /**
   * Parameters the gateway fills from the run (see InjectedValue), hidden
   * from the model; a model that sets one gets an INVALID_ARGUMENTS result.
   */
  'injected_parameters': (string)[];
  /**
   * Calls of this tool wait for a human decision (Agent.Resume) before running.
   */
  'requires_approval': (boolean);
  /**
   * How loop detection judges repeated calls of this tool; unset = the
   * defaults (every argument counts, results must be identical, no repeat is
   * expected). The gateway's AGENTLOOP_LOOP_POLICIES replaces it per tool.
   */
  'loop_policy': (_agentloop_v1_LoopPolicy__Output | null);
}
