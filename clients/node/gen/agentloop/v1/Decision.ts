// Original file: protos/agentloop/v1/agent.proto

import type { DecisionKind as _agentloop_v1_DecisionKind, DecisionKind__Output as _agentloop_v1_DecisionKind__Output } from '../../agentloop/v1/DecisionKind';

/**
 * The loop made a judgement worth showing: loop detected, not enough steps
 * left, a flow-guidance hint, memory stored or recalled, a hook that changed
 * something, a structured answer that failed validation.
 */
export interface Decision {
  /**
   * Details for a person.
   */
  'detail'?: (string);
  /**
   * What kind of judgement.
   */
  'kind'?: (_agentloop_v1_DecisionKind);
}

/**
 * The loop made a judgement worth showing: loop detected, not enough steps
 * left, a flow-guidance hint, memory stored or recalled, a hook that changed
 * something, a structured answer that failed validation.
 */
export interface Decision__Output {
  /**
   * Details for a person.
   */
  'detail': (string);
  /**
   * What kind of judgement.
   */
  'kind': (_agentloop_v1_DecisionKind__Output);
}
