// Original file: protos/agentloop/v1/agent.proto

import type { NodeStart as _agentloop_v1_NodeStart, NodeStart__Output as _agentloop_v1_NodeStart__Output } from '../../agentloop/v1/NodeStart';
import type { NodeEnd as _agentloop_v1_NodeEnd, NodeEnd__Output as _agentloop_v1_NodeEnd__Output } from '../../agentloop/v1/NodeEnd';
import type { LlmToken as _agentloop_v1_LlmToken, LlmToken__Output as _agentloop_v1_LlmToken__Output } from '../../agentloop/v1/LlmToken';
import type { ToolStart as _agentloop_v1_ToolStart, ToolStart__Output as _agentloop_v1_ToolStart__Output } from '../../agentloop/v1/ToolStart';
import type { ToolEnd as _agentloop_v1_ToolEnd, ToolEnd__Output as _agentloop_v1_ToolEnd__Output } from '../../agentloop/v1/ToolEnd';
import type { RunFinal as _agentloop_v1_RunFinal, RunFinal__Output as _agentloop_v1_RunFinal__Output } from '../../agentloop/v1/RunFinal';
import type { RunError as _agentloop_v1_RunError, RunError__Output as _agentloop_v1_RunError__Output } from '../../agentloop/v1/RunError';
import type { Interrupt as _agentloop_v1_Interrupt, Interrupt__Output as _agentloop_v1_Interrupt__Output } from '../../agentloop/v1/Interrupt';
import type { Decision as _agentloop_v1_Decision, Decision__Output as _agentloop_v1_Decision__Output } from '../../agentloop/v1/Decision';
import type { Long } from '@grpc/proto-loader';

/**
 * One event of a run, as Run, Resume and Watch stream it.
 */
export interface RunEvent {
  /**
   * The run this event belongs to.
   */
  'run_id'?: (string);
  /**
   * Position of the event in the run, from 1, increasing. A live stream
   * numbers its events one by one; a replay from the store (Watch, or Run
   * and Resume catching up) joins consecutive llm_token events of one step
   * into one, numbered like the last of them. A number is skipped only just
   * before such an event, or where a gateway that stopped lost events it had
   * not stored (the Decision of kind "resumed" names that range).
   */
  'sequence'?: (number | string | Long);
  /**
   * The conversation the run belongs to.
   */
  'thread_id'?: (string);
  /**
   * A node started.
   */
  'node_start'?: (_agentloop_v1_NodeStart | null);
  /**
   * A node ended.
   */
  'node_end'?: (_agentloop_v1_NodeEnd | null);
  /**
   * The model produced a token.
   */
  'llm_token'?: (_agentloop_v1_LlmToken | null);
  /**
   * A tool call started.
   */
  'tool_start'?: (_agentloop_v1_ToolStart | null);
  /**
   * A tool call ended.
   */
  'tool_end'?: (_agentloop_v1_ToolEnd | null);
  /**
   * The run finished; always the last event of a successful run.
   */
  'final'?: (_agentloop_v1_RunFinal | null);
  /**
   * The run failed; always the last event of a failed run.
   */
  'error'?: (_agentloop_v1_RunError | null);
  /**
   * The run paused for approval: the last event until Resume but for the
   * decision and node_end events that close the paused step.
   */
  'interrupt'?: (_agentloop_v1_Interrupt | null);
  /**
   * A judgement of the loop (loop detection, guidance, memory, hooks).
   */
  'decision'?: (_agentloop_v1_Decision | null);
  /**
   * The event itself.
   */
  'event'?: "node_start"|"node_end"|"llm_token"|"tool_start"|"tool_end"|"final"|"error"|"interrupt"|"decision";
}

/**
 * One event of a run, as Run, Resume and Watch stream it.
 */
export interface RunEvent__Output {
  /**
   * The run this event belongs to.
   */
  'run_id': (string);
  /**
   * Position of the event in the run, from 1, increasing. A live stream
   * numbers its events one by one; a replay from the store (Watch, or Run
   * and Resume catching up) joins consecutive llm_token events of one step
   * into one, numbered like the last of them. A number is skipped only just
   * before such an event, or where a gateway that stopped lost events it had
   * not stored (the Decision of kind "resumed" names that range).
   */
  'sequence': (string);
  /**
   * The conversation the run belongs to.
   */
  'thread_id': (string);
  /**
   * A node started.
   */
  'node_start'?: (_agentloop_v1_NodeStart__Output | null);
  /**
   * A node ended.
   */
  'node_end'?: (_agentloop_v1_NodeEnd__Output | null);
  /**
   * The model produced a token.
   */
  'llm_token'?: (_agentloop_v1_LlmToken__Output | null);
  /**
   * A tool call started.
   */
  'tool_start'?: (_agentloop_v1_ToolStart__Output | null);
  /**
   * A tool call ended.
   */
  'tool_end'?: (_agentloop_v1_ToolEnd__Output | null);
  /**
   * The run finished; always the last event of a successful run.
   */
  'final'?: (_agentloop_v1_RunFinal__Output | null);
  /**
   * The run failed; always the last event of a failed run.
   */
  'error'?: (_agentloop_v1_RunError__Output | null);
  /**
   * The run paused for approval: the last event until Resume but for the
   * decision and node_end events that close the paused step.
   */
  'interrupt'?: (_agentloop_v1_Interrupt__Output | null);
  /**
   * A judgement of the loop (loop detection, guidance, memory, hooks).
   */
  'decision'?: (_agentloop_v1_Decision__Output | null);
  /**
   * The event itself.
   */
  'event'?: "node_start"|"node_end"|"llm_token"|"tool_start"|"tool_end"|"final"|"error"|"interrupt"|"decision";
}
