// Original file: protos/agentloop/v1/agent.proto


// Original file: protos/agentloop/v1/agent.proto

/**
 * The possible answers.
 */
export const _agentloop_v1_ApprovalDecision_Verdict = {
  /**
   * Not set; rejected with INVALID_ARGUMENT.
   */
  VERDICT_UNSPECIFIED: 'VERDICT_UNSPECIFIED',
  /**
   * Run the call as the model wrote it.
   */
  VERDICT_APPROVE: 'VERDICT_APPROVE',
  /**
   * Do not run it; the model reads the reason as the call's result.
   */
  VERDICT_REJECT: 'VERDICT_REJECT',
  /**
   * Run it with arguments_json instead.
   */
  VERDICT_EDIT: 'VERDICT_EDIT',
} as const;

/**
 * The possible answers.
 */
export type _agentloop_v1_ApprovalDecision_Verdict =
  /**
   * Not set; rejected with INVALID_ARGUMENT.
   */
  | 'VERDICT_UNSPECIFIED'
  | 0
  /**
   * Run the call as the model wrote it.
   */
  | 'VERDICT_APPROVE'
  | 1
  /**
   * Do not run it; the model reads the reason as the call's result.
   */
  | 'VERDICT_REJECT'
  | 2
  /**
   * Run it with arguments_json instead.
   */
  | 'VERDICT_EDIT'
  | 3

/**
 * The possible answers.
 */
export type _agentloop_v1_ApprovalDecision_Verdict__Output = typeof _agentloop_v1_ApprovalDecision_Verdict[keyof typeof _agentloop_v1_ApprovalDecision_Verdict]

/**
 * A human's answer to one pending tool call.
 */
export interface ApprovalDecision {
  /**
   * The pending call.
   */
  'tool_call_id'?: (string);
  /**
   * What to do with it.
   */
  'verdict'?: (_agentloop_v1_ApprovalDecision_Verdict);
  /**
   * Why (shown to the model on REJECT).
   */
  'reason'?: (string);
  /**
   * With EDIT: the arguments to run the call with instead, JSON text.
   */
  'arguments_json'?: (string);
}

/**
 * A human's answer to one pending tool call.
 */
export interface ApprovalDecision__Output {
  /**
   * The pending call.
   */
  'tool_call_id': (string);
  /**
   * What to do with it.
   */
  'verdict': (_agentloop_v1_ApprovalDecision_Verdict__Output);
  /**
   * Why (shown to the model on REJECT).
   */
  'reason': (string);
  /**
   * With EDIT: the arguments to run the call with instead, JSON text.
   */
  'arguments_json': (string);
}
