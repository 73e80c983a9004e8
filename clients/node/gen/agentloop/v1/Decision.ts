// Original file: protos/agentloop/v1/agent.proto


/**
 * The loop made a judgement worth showing: loop detected, not enough steps
 * left, a flow-guidance hint, memory stored or recalled, a hook that changed
 * something, a structured answer that failed validation.
 */
export interface Decision {
  /**
   * What kind: "loop_detected", "remaining_steps", "flow_guidance",
   * "memory_stored", "memory_recalled", "hook", "structured_output_invalid",
   * "approval".
   */
  'kind'?: (string);
  /**
   * Details for a person.
   */
  'detail'?: (string);
}

/**
 * The loop made a judgement worth showing: loop detected, not enough steps
 * left, a flow-guidance hint, memory stored or recalled, a hook that changed
 * something, a structured answer that failed validation.
 */
export interface Decision__Output {
  /**
   * What kind: "loop_detected", "remaining_steps", "flow_guidance",
   * "memory_stored", "memory_recalled", "hook", "structured_output_invalid",
   * "approval".
   */
  'kind': (string);
  /**
   * Details for a person.
   */
  'detail': (string);
}
