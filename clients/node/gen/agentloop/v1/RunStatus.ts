// Original file: protos/agentloop/v1/agent.proto

/**
 * Lifecycle of a run.
 */
export const RunStatus = {
  /**
   * Not set.
   */
  RUN_STATUS_UNSPECIFIED: 'RUN_STATUS_UNSPECIFIED',
  /**
   * Waiting for the thread's active run to end.
   */
  RUN_STATUS_QUEUED: 'RUN_STATUS_QUEUED',
  /**
   * Executing (or interrupted and waiting to be resumed, see RunState.owner).
   */
  RUN_STATUS_RUNNING: 'RUN_STATUS_RUNNING',
  /**
   * Ended with a final reply.
   */
  RUN_STATUS_COMPLETED: 'RUN_STATUS_COMPLETED',
  /**
   * Ended with an error event.
   */
  RUN_STATUS_FAILED: 'RUN_STATUS_FAILED',
  /**
   * Stopped by Cancel.
   */
  RUN_STATUS_CANCELLED: 'RUN_STATUS_CANCELLED',
  /**
   * Waiting for a human decision on tool calls (see Interrupt); continue it
   * with Resume and decisions, from any gateway, at any later time.
   */
  RUN_STATUS_PAUSED: 'RUN_STATUS_PAUSED',
} as const;

/**
 * Lifecycle of a run.
 */
export type RunStatus =
  /**
   * Not set.
   */
  | 'RUN_STATUS_UNSPECIFIED'
  | 0
  /**
   * Waiting for the thread's active run to end.
   */
  | 'RUN_STATUS_QUEUED'
  | 1
  /**
   * Executing (or interrupted and waiting to be resumed, see RunState.owner).
   */
  | 'RUN_STATUS_RUNNING'
  | 2
  /**
   * Ended with a final reply.
   */
  | 'RUN_STATUS_COMPLETED'
  | 3
  /**
   * Ended with an error event.
   */
  | 'RUN_STATUS_FAILED'
  | 4
  /**
   * Stopped by Cancel.
   */
  | 'RUN_STATUS_CANCELLED'
  | 5
  /**
   * Waiting for a human decision on tool calls (see Interrupt); continue it
   * with Resume and decisions, from any gateway, at any later time.
   */
  | 'RUN_STATUS_PAUSED'
  | 6

/**
 * Lifecycle of a run.
 */
export type RunStatus__Output = typeof RunStatus[keyof typeof RunStatus]
