// Original file: protos/agentloop/v1/agent.proto

import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from '../../agentloop/v1/Usage';

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
   * Why the loop ended: "completed" (the model answered), "max_steps" (the
   * step limit was reached and the model answered without tools),
   * "needs_more_steps" (the model asked for more tool calls than steps
   * remained), "loop_detected", "cancelled" (Cancel was called), "paused"
   * (waiting for approval) or "error" (see the error event).
   */
  'stop_reason'?: (string);
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
   * Why the loop ended: "completed" (the model answered), "max_steps" (the
   * step limit was reached and the model answered without tools),
   * "needs_more_steps" (the model asked for more tool calls than steps
   * remained), "loop_detected", "cancelled" (Cancel was called), "paused"
   * (waiting for approval) or "error" (see the error event).
   */
  'stop_reason': (string);
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
}
