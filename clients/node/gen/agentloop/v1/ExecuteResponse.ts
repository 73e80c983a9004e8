// Original file: protos/agentloop/v1/tools.proto

import type { ToolStarted as _agentloop_v1_ToolStarted, ToolStarted__Output as _agentloop_v1_ToolStarted__Output } from '../../agentloop/v1/ToolStarted';
import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from '../../agentloop/v1/ToolResult';

/**
 * One event of an Execute stream.
 */
export interface ExecuteResponse {
  /**
   * A call has started running.
   */
  'started'?: (_agentloop_v1_ToolStarted | null);
  /**
   * A call has finished, successfully or not.
   */
  'finished'?: (_agentloop_v1_ToolResult | null);
  /**
   * A call started, or a call finished.
   */
  'event'?: "started"|"finished";
}

/**
 * One event of an Execute stream.
 */
export interface ExecuteResponse__Output {
  /**
   * A call has started running.
   */
  'started'?: (_agentloop_v1_ToolStarted__Output | null);
  /**
   * A call has finished, successfully or not.
   */
  'finished'?: (_agentloop_v1_ToolResult__Output | null);
  /**
   * A call started, or a call finished.
   */
  'event'?: "started"|"finished";
}
