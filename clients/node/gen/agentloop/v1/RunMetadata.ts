// Original file: protos/agentloop/v1/agent.proto

import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from '../../agentloop/v1/Usage';
import type { StopReason as _agentloop_v1_StopReason, StopReason__Output as _agentloop_v1_StopReason__Output } from '../../agentloop/v1/StopReason';

/**
 * Counters describing a finished run.
 */
export interface RunMetadata {
  /**
   * Tool rounds executed.
   */
  'steps_taken'?: (number);
  /**
   * Names of the tools called, in first-use order, without repeats.
   */
  'tools_used'?: (string)[];
  /**
   * Number of model calls made.
   */
  'llm_calls'?: (number);
  /**
   * Token usage summed over all model calls.
   */
  'usage'?: (_agentloop_v1_Usage | null);
  /**
   * Number of tool calls made, errors included.
   */
  'tool_calls'?: (number);
  /**
   * Why the loop ended; STOP_REASON_UNSPECIFIED while the run goes on.
   */
  'stop_reason'?: (_agentloop_v1_StopReason);
  /**
   * Names of the Reasoner's models that answered this run's model calls, in
   * first-use order, without repeats: more than one when a fallback answered
   * (see DECISION_KIND_MODEL_FALLBACK).
   */
  'models'?: (string)[];
}

/**
 * Counters describing a finished run.
 */
export interface RunMetadata__Output {
  /**
   * Tool rounds executed.
   */
  'steps_taken': (number);
  /**
   * Names of the tools called, in first-use order, without repeats.
   */
  'tools_used': (string)[];
  /**
   * Number of model calls made.
   */
  'llm_calls': (number);
  /**
   * Token usage summed over all model calls.
   */
  'usage': (_agentloop_v1_Usage__Output | null);
  /**
   * Number of tool calls made, errors included.
   */
  'tool_calls': (number);
  /**
   * Why the loop ended; STOP_REASON_UNSPECIFIED while the run goes on.
   */
  'stop_reason': (_agentloop_v1_StopReason__Output);
  /**
   * Names of the Reasoner's models that answered this run's model calls, in
   * first-use order, without repeats: more than one when a fallback answered
   * (see DECISION_KIND_MODEL_FALLBACK).
   */
  'models': (string)[];
}
