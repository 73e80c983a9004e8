// Original file: protos/agentloop/v1/agent.proto

/**
 * Why a run's loop ended.
 */
export const StopReason = {
  /**
   * Not set: the run has not ended.
   */
  STOP_REASON_UNSPECIFIED: 'STOP_REASON_UNSPECIFIED',
  /**
   * The model answered.
   */
  STOP_REASON_COMPLETED: 'STOP_REASON_COMPLETED',
  /**
   * The step limit was reached and the model answered without tools.
   */
  STOP_REASON_MAX_STEPS: 'STOP_REASON_MAX_STEPS',
  /**
   * The model asked for more tool calls than steps remained.
   */
  STOP_REASON_NEEDS_MORE_STEPS: 'STOP_REASON_NEEDS_MORE_STEPS',
  /**
   * Loop detection stopped the run.
   */
  STOP_REASON_LOOP_DETECTED: 'STOP_REASON_LOOP_DETECTED',
  /**
   * Cancel was called.
   */
  STOP_REASON_CANCELLED: 'STOP_REASON_CANCELLED',
  /**
   * Waiting for a human decision on tool calls.
   */
  STOP_REASON_PAUSED: 'STOP_REASON_PAUSED',
  /**
   * The run failed; see the error event.
   */
  STOP_REASON_ERROR: 'STOP_REASON_ERROR',
  /**
   * The run asked for a structured answer and the model gave none.
   */
  STOP_REASON_STRUCTURED_OUTPUT_MISSING: 'STOP_REASON_STRUCTURED_OUTPUT_MISSING',
} as const;

/**
 * Why a run's loop ended.
 */
export type StopReason =
  /**
   * Not set: the run has not ended.
   */
  | 'STOP_REASON_UNSPECIFIED'
  | 0
  /**
   * The model answered.
   */
  | 'STOP_REASON_COMPLETED'
  | 1
  /**
   * The step limit was reached and the model answered without tools.
   */
  | 'STOP_REASON_MAX_STEPS'
  | 2
  /**
   * The model asked for more tool calls than steps remained.
   */
  | 'STOP_REASON_NEEDS_MORE_STEPS'
  | 3
  /**
   * Loop detection stopped the run.
   */
  | 'STOP_REASON_LOOP_DETECTED'
  | 4
  /**
   * Cancel was called.
   */
  | 'STOP_REASON_CANCELLED'
  | 5
  /**
   * Waiting for a human decision on tool calls.
   */
  | 'STOP_REASON_PAUSED'
  | 6
  /**
   * The run failed; see the error event.
   */
  | 'STOP_REASON_ERROR'
  | 7
  /**
   * The run asked for a structured answer and the model gave none.
   */
  | 'STOP_REASON_STRUCTURED_OUTPUT_MISSING'
  | 8

/**
 * Why a run's loop ended.
 */
export type StopReason__Output = typeof StopReason[keyof typeof StopReason]
