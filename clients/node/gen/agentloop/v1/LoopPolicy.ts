// Original file: protos/agentloop/v1/common.proto


/**
 * What loop detection must know about one tool that it cannot guess
 * (docs/loop-detection.md). Paths are dotted keys into a JSON object
 * ("reason", "meta.request_id"); "*" matches any key or array index.
 */
export interface LoopPolicy {
  /**
   * Argument fields that do not change what a call asks for (a free-text
   * reason, a client request id): calls that differ only there count as the
   * same call.
   */
  'ignore_args'?: (string)[];
  /**
   * Fields of a JSON result that change on every call without telling
   * anything new (timestamps, request ids): removed before results are
   * compared.
   */
  'volatile_result_fields'?: (string)[];
  /**
   * How many times in a row the same call may return the same result before
   * it counts as a loop (a poll tool waiting for a job); 0 = none. At most 100.
   */
  'repeat_budget'?: (number);
}

/**
 * What loop detection must know about one tool that it cannot guess
 * (docs/loop-detection.md). Paths are dotted keys into a JSON object
 * ("reason", "meta.request_id"); "*" matches any key or array index.
 */
export interface LoopPolicy__Output {
  /**
   * Argument fields that do not change what a call asks for (a free-text
   * reason, a client request id): calls that differ only there count as the
   * same call.
   */
  'ignore_args': (string)[];
  /**
   * Fields of a JSON result that change on every call without telling
   * anything new (timestamps, request ids): removed before results are
   * compared.
   */
  'volatile_result_fields': (string)[];
  /**
   * How many times in a row the same call may return the same result before
   * it counts as a loop (a poll tool waiting for a job); 0 = none. At most 100.
   */
  'repeat_budget': (number);
}
