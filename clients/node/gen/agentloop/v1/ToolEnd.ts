// Original file: protos/agentloop/v1/agent.proto

import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from '../../agentloop/v1/ToolResult';

/**
 * A tool call has finished.
 */
export interface ToolEnd {
  /**
   * The tool's name.
   */
  'name'?: (string);
  /**
   * The ToolCall.id of the call.
   */
  'tool_call_id'?: (string);
  /**
   * The full outcome, including error details.
   */
  'result'?: (_agentloop_v1_ToolResult | null);
}

/**
 * A tool call has finished.
 */
export interface ToolEnd__Output {
  /**
   * The tool's name.
   */
  'name': (string);
  /**
   * The ToolCall.id of the call.
   */
  'tool_call_id': (string);
  /**
   * The full outcome, including error details.
   */
  'result': (_agentloop_v1_ToolResult__Output | null);
}
