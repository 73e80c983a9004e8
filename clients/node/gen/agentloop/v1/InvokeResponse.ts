// Original file: protos/agentloop/v1/agent.proto

import type { RunFinal as _agentloop_v1_RunFinal, RunFinal__Output as _agentloop_v1_RunFinal__Output } from '../../agentloop/v1/RunFinal';
import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from '../../agentloop/v1/ToolResult';

/**
 * Response of Agent.Invoke.
 */
export interface InvokeResponse {
  /**
   * The run's id.
   */
  'run_id'?: (string);
  /**
   * The conversation the run belongs to.
   */
  'thread_id'?: (string);
  /**
   * The outcome, as in the final event of Run.
   */
  'final'?: (_agentloop_v1_RunFinal | null);
  /**
   * Every tool result of the run, in completion order (the first ones only
   * when tool_results_truncated).
   */
  'tool_results'?: (_agentloop_v1_ToolResult)[];
  /**
   * True when tool_results was cut to keep the response under 4 MiB, the
   * default receive limit of gRPC clients; every result is also a tool
   * message of the thread (GetThread).
   */
  'tool_results_truncated'?: (boolean);
}

/**
 * Response of Agent.Invoke.
 */
export interface InvokeResponse__Output {
  /**
   * The run's id.
   */
  'run_id': (string);
  /**
   * The conversation the run belongs to.
   */
  'thread_id': (string);
  /**
   * The outcome, as in the final event of Run.
   */
  'final': (_agentloop_v1_RunFinal__Output | null);
  /**
   * Every tool result of the run, in completion order (the first ones only
   * when tool_results_truncated).
   */
  'tool_results': (_agentloop_v1_ToolResult__Output)[];
  /**
   * True when tool_results was cut to keep the response under 4 MiB, the
   * default receive limit of gRPC clients; every result is also a tool
   * message of the thread (GetThread).
   */
  'tool_results_truncated': (boolean);
}
