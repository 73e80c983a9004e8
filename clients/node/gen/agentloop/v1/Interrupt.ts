// Original file: protos/agentloop/v1/agent.proto

import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from '../../agentloop/v1/ToolCall';

/**
 * The run paused: some tool calls wait for a human decision.
 */
export interface Interrupt {
  /**
   * The calls waiting for approval, as the model wrote them.
   */
  'pending'?: (_agentloop_v1_ToolCall)[];
  /**
   * Why they need approval.
   */
  'reason'?: (string);
}

/**
 * The run paused: some tool calls wait for a human decision.
 */
export interface Interrupt__Output {
  /**
   * The calls waiting for approval, as the model wrote them.
   */
  'pending': (_agentloop_v1_ToolCall__Output)[];
  /**
   * Why they need approval.
   */
  'reason': (string);
}
