// Original file: protos/agentloop/v1/agent.proto

/**
 * What to do when a run is requested on a thread that already has one running.
 */
export const ConcurrencyPolicy = {
  /**
   * Not set: the same as CONCURRENCY_POLICY_REJECT.
   */
  CONCURRENCY_POLICY_UNSPECIFIED: 'CONCURRENCY_POLICY_UNSPECIFIED',
  /**
   * Refuse the new run with ABORTED.
   */
  CONCURRENCY_POLICY_REJECT: 'CONCURRENCY_POLICY_REJECT',
  /**
   * Queue the new run; it starts when the active one ends (its stream stays
   * open and waits).
   */
  CONCURRENCY_POLICY_ENQUEUE: 'CONCURRENCY_POLICY_ENQUEUE',
} as const;

/**
 * What to do when a run is requested on a thread that already has one running.
 */
export type ConcurrencyPolicy =
  /**
   * Not set: the same as CONCURRENCY_POLICY_REJECT.
   */
  | 'CONCURRENCY_POLICY_UNSPECIFIED'
  | 0
  /**
   * Refuse the new run with ABORTED.
   */
  | 'CONCURRENCY_POLICY_REJECT'
  | 1
  /**
   * Queue the new run; it starts when the active one ends (its stream stays
   * open and waits).
   */
  | 'CONCURRENCY_POLICY_ENQUEUE'
  | 2

/**
 * What to do when a run is requested on a thread that already has one running.
 */
export type ConcurrencyPolicy__Output = typeof ConcurrencyPolicy[keyof typeof ConcurrencyPolicy]
