// Original file: protos/agentloop/v1/agent.proto

/**
 * The kinds of judgement a Decision event reports. New kinds may be added;
 * a client shows an unknown kind by its detail text.
 */
export const DecisionKind = {
  /**
   * Not set.
   */
  DECISION_KIND_UNSPECIFIED: 'DECISION_KIND_UNSPECIFIED',
  /**
   * The model is going in circles; the run stops.
   */
  DECISION_KIND_LOOP_DETECTED: 'DECISION_KIND_LOOP_DETECTED',
  /**
   * Not enough steps left for the tools the model asked for.
   */
  DECISION_KIND_REMAINING_STEPS: 'DECISION_KIND_REMAINING_STEPS',
  /**
   * A tool's flow-guidance rule gave the model a hint.
   */
  DECISION_KIND_FLOW_GUIDANCE: 'DECISION_KIND_FLOW_GUIDANCE',
  /**
   * A long-term memory was stored.
   */
  DECISION_KIND_MEMORY_STORED: 'DECISION_KIND_MEMORY_STORED',
  /**
   * Long-term memories were recalled into the run.
   */
  DECISION_KIND_MEMORY_RECALLED: 'DECISION_KIND_MEMORY_RECALLED',
  /**
   * A hook changed messages, tool calls or results.
   */
  DECISION_KIND_HOOK: 'DECISION_KIND_HOOK',
  /**
   * The structured answer failed its schema; the model is asked again.
   */
  DECISION_KIND_STRUCTURED_OUTPUT_INVALID: 'DECISION_KIND_STRUCTURED_OUTPUT_INVALID',
  /**
   * The model answered in plain text; the structured answer is asked for again.
   */
  DECISION_KIND_STRUCTURED_OUTPUT_MISSING: 'DECISION_KIND_STRUCTURED_OUTPUT_MISSING',
  /**
   * Tool calls wait for a human decision.
   */
  DECISION_KIND_APPROVAL: 'DECISION_KIND_APPROVAL',
  /**
   * Older messages were summarized to fit the context budget.
   */
  DECISION_KIND_CONTEXT_COMPRESSED: 'DECISION_KIND_CONTEXT_COMPRESSED',
  /**
   * Older messages were dropped to fit the context budget.
   */
  DECISION_KIND_CONTEXT_TRIMMED: 'DECISION_KIND_CONTEXT_TRIMMED',
  /**
   * The summary call that compresses the context failed.
   */
  DECISION_KIND_CONTEXT_SUMMARY_FAILED: 'DECISION_KIND_CONTEXT_SUMMARY_FAILED',
  /**
   * The call that writes the session memory failed.
   */
  DECISION_KIND_SESSION_MEMORY_FAILED: 'DECISION_KIND_SESSION_MEMORY_FAILED',
  /**
   * The run was resumed from its last checkpoint.
   */
  DECISION_KIND_RESUMED: 'DECISION_KIND_RESUMED',
  /**
   * Text the model streamed turned out to precede tool calls (planning, not
   * the answer): a client showing tokens may set it apart.
   */
  DECISION_KIND_PLANNING_TEXT: 'DECISION_KIND_PLANNING_TEXT',
  /**
   * The model asked for failed and another answered in its place (its
   * fallback); the detail names both and why the first failed.
   */
  DECISION_KIND_MODEL_FALLBACK: 'DECISION_KIND_MODEL_FALLBACK',
  /**
   * The model refused the prompt as longer than its context window: older
   * messages were summarized and the step is tried once more.
   */
  DECISION_KIND_CONTEXT_LENGTH_EXCEEDED: 'DECISION_KIND_CONTEXT_LENGTH_EXCEEDED',
} as const;

/**
 * The kinds of judgement a Decision event reports. New kinds may be added;
 * a client shows an unknown kind by its detail text.
 */
export type DecisionKind =
  /**
   * Not set.
   */
  | 'DECISION_KIND_UNSPECIFIED'
  | 0
  /**
   * The model is going in circles; the run stops.
   */
  | 'DECISION_KIND_LOOP_DETECTED'
  | 1
  /**
   * Not enough steps left for the tools the model asked for.
   */
  | 'DECISION_KIND_REMAINING_STEPS'
  | 2
  /**
   * A tool's flow-guidance rule gave the model a hint.
   */
  | 'DECISION_KIND_FLOW_GUIDANCE'
  | 3
  /**
   * A long-term memory was stored.
   */
  | 'DECISION_KIND_MEMORY_STORED'
  | 4
  /**
   * Long-term memories were recalled into the run.
   */
  | 'DECISION_KIND_MEMORY_RECALLED'
  | 5
  /**
   * A hook changed messages, tool calls or results.
   */
  | 'DECISION_KIND_HOOK'
  | 6
  /**
   * The structured answer failed its schema; the model is asked again.
   */
  | 'DECISION_KIND_STRUCTURED_OUTPUT_INVALID'
  | 7
  /**
   * The model answered in plain text; the structured answer is asked for again.
   */
  | 'DECISION_KIND_STRUCTURED_OUTPUT_MISSING'
  | 8
  /**
   * Tool calls wait for a human decision.
   */
  | 'DECISION_KIND_APPROVAL'
  | 9
  /**
   * Older messages were summarized to fit the context budget.
   */
  | 'DECISION_KIND_CONTEXT_COMPRESSED'
  | 10
  /**
   * Older messages were dropped to fit the context budget.
   */
  | 'DECISION_KIND_CONTEXT_TRIMMED'
  | 11
  /**
   * The summary call that compresses the context failed.
   */
  | 'DECISION_KIND_CONTEXT_SUMMARY_FAILED'
  | 12
  /**
   * The call that writes the session memory failed.
   */
  | 'DECISION_KIND_SESSION_MEMORY_FAILED'
  | 13
  /**
   * The run was resumed from its last checkpoint.
   */
  | 'DECISION_KIND_RESUMED'
  | 14
  /**
   * Text the model streamed turned out to precede tool calls (planning, not
   * the answer): a client showing tokens may set it apart.
   */
  | 'DECISION_KIND_PLANNING_TEXT'
  | 15
  /**
   * The model asked for failed and another answered in its place (its
   * fallback); the detail names both and why the first failed.
   */
  | 'DECISION_KIND_MODEL_FALLBACK'
  | 16
  /**
   * The model refused the prompt as longer than its context window: older
   * messages were summarized and the step is tried once more.
   */
  | 'DECISION_KIND_CONTEXT_LENGTH_EXCEEDED'
  | 17

/**
 * The kinds of judgement a Decision event reports. New kinds may be added;
 * a client shows an unknown kind by its detail text.
 */
export type DecisionKind__Output = typeof DecisionKind[keyof typeof DecisionKind]
