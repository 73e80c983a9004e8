// Original file: protos/agentloop/v1/agent.proto

import type { StreamMode as _agentloop_v1_StreamMode, StreamMode__Output as _agentloop_v1_StreamMode__Output } from '../../agentloop/v1/StreamMode';
import type { ConcurrencyPolicy as _agentloop_v1_ConcurrencyPolicy, ConcurrencyPolicy__Output as _agentloop_v1_ConcurrencyPolicy__Output } from '../../agentloop/v1/ConcurrencyPolicy';
import type { LoopDetection as _agentloop_v1_LoopDetection, LoopDetection__Output as _agentloop_v1_LoopDetection__Output } from '../../agentloop/v1/LoopDetection';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * Per-run settings; every field has a sensible default.
 */
export interface RunOptions {
  /**
   * System prompt placed first in the conversation; empty uses the gateway's
   * default prompt.
   */
  'system_prompt'?: (string);
  /**
   * Maximum number of tool rounds, in [1, 1000]; 0 means 25. At the limit
   * the model is called once without tools to answer from what it has.
   */
  'max_steps'?: (number);
  /**
   * Which model calls stream tokens; see StreamMode.
   */
  'stream_mode'?: (_agentloop_v1_StreamMode);
  /**
   * Model name passed to the Reasoner; empty uses its default.
   */
  'model'?: (string);
  /**
   * Restrict the run to these tools; empty offers every registered tool.
   * Unknown names are rejected with INVALID_ARGUMENT.
   */
  'tools'?: (string)[];
  /**
   * Sampling temperature in [0, 2] for every model call; unset uses the
   * endpoint's default.
   */
  'temperature'?: (number | string);
  /**
   * What to do if the thread already has an active run.
   */
  'concurrency'?: (_agentloop_v1_ConcurrencyPolicy);
  /**
   * Cancel the run when the client's stream goes away. By default the run
   * goes on in the background and its result can be read or watched later.
   */
  'cancel_on_disconnect'?: (boolean);
  /**
   * Loop detection settings; unset uses the defaults.
   */
  'loop_detection'?: (_agentloop_v1_LoopDetection | null);
  /**
   * Run a round's tool calls one after the other, in the model's order,
   * instead of in parallel.
   */
  'serial_tools'?: (boolean);
  /**
   * Tool names whose calls need human approval in this run ("*" = every
   * tool), on top of tools that always require it.
   */
  'require_approval'?: (string)[];
  /**
   * Hooks to add to this run, after the gateway's own (AGENTLOOP_HOOKS),
   * which every run gets; each must be one the gateway lets clients add
   * (AGENTLOOP_CLIENT_HOOKS), else INVALID_ARGUMENT.
   */
  'hooks'?: (string)[];
  /**
   * Skip long-term memory: no facts recalled, no "remember ..." stored.
   */
  'disable_memory'?: (boolean);
  /**
   * Do not give the model flow-guidance hints.
   */
  'disable_flow_guidance'?: (boolean);
  /**
   * Prompt token budget of every model call, in [0, 10000000]; 0 uses the
   * gateway's AGENTLOOP_CONTEXT_BUDGET_TOKENS. Older messages are summarized
   * (or, when that fails, trimmed) so that each call stays under it.
   */
  'context_budget_tokens'?: (number);
  /**
   * Tokens of the newest messages always kept verbatim when older ones are
   * summarized; 0 means a quarter of the budget. Must be below the budget.
   */
  'context_keep_recent_tokens'?: (number);
  /**
   * Instruction of the summary call that compresses older messages, at most
   * 8000 characters; empty uses the gateway's default prompt.
   */
  'context_summary_prompt'?: (string);
  /**
   * At the end of the run, store a short summary of what was learned as the
   * user's long-term memory (one model call). Ignored with disable_memory.
   */
  'session_memory'?: (boolean);
  /**
   * Per tool call timeout, in (0s, 3600s]; unset uses the ToolService default.
   */
  'tool_timeout'?: (_google_protobuf_Duration | null);
  /**
   * A JSON Schema (an object) the final answer must satisfy. The gateway adds
   * a finish tool ("final_answer") with this schema, requires tool use until a
   * call validates, feeds validation errors back, and puts the validated
   * object in RunFinal.structured_output. Its references must point inside
   * it ("#/$defs/Name"): nothing it names is fetched or read, and any other
   * reference is INVALID_ARGUMENT.
   */
  'output_schema'?: (_google_protobuf_Struct | null);
  '_temperature'?: "temperature";
}

/**
 * Per-run settings; every field has a sensible default.
 */
export interface RunOptions__Output {
  /**
   * System prompt placed first in the conversation; empty uses the gateway's
   * default prompt.
   */
  'system_prompt': (string);
  /**
   * Maximum number of tool rounds, in [1, 1000]; 0 means 25. At the limit
   * the model is called once without tools to answer from what it has.
   */
  'max_steps': (number);
  /**
   * Which model calls stream tokens; see StreamMode.
   */
  'stream_mode': (_agentloop_v1_StreamMode__Output);
  /**
   * Model name passed to the Reasoner; empty uses its default.
   */
  'model': (string);
  /**
   * Restrict the run to these tools; empty offers every registered tool.
   * Unknown names are rejected with INVALID_ARGUMENT.
   */
  'tools': (string)[];
  /**
   * Sampling temperature in [0, 2] for every model call; unset uses the
   * endpoint's default.
   */
  'temperature'?: (number);
  /**
   * What to do if the thread already has an active run.
   */
  'concurrency': (_agentloop_v1_ConcurrencyPolicy__Output);
  /**
   * Cancel the run when the client's stream goes away. By default the run
   * goes on in the background and its result can be read or watched later.
   */
  'cancel_on_disconnect': (boolean);
  /**
   * Loop detection settings; unset uses the defaults.
   */
  'loop_detection': (_agentloop_v1_LoopDetection__Output | null);
  /**
   * Run a round's tool calls one after the other, in the model's order,
   * instead of in parallel.
   */
  'serial_tools': (boolean);
  /**
   * Tool names whose calls need human approval in this run ("*" = every
   * tool), on top of tools that always require it.
   */
  'require_approval': (string)[];
  /**
   * Hooks to add to this run, after the gateway's own (AGENTLOOP_HOOKS),
   * which every run gets; each must be one the gateway lets clients add
   * (AGENTLOOP_CLIENT_HOOKS), else INVALID_ARGUMENT.
   */
  'hooks': (string)[];
  /**
   * Skip long-term memory: no facts recalled, no "remember ..." stored.
   */
  'disable_memory': (boolean);
  /**
   * Do not give the model flow-guidance hints.
   */
  'disable_flow_guidance': (boolean);
  /**
   * Prompt token budget of every model call, in [0, 10000000]; 0 uses the
   * gateway's AGENTLOOP_CONTEXT_BUDGET_TOKENS. Older messages are summarized
   * (or, when that fails, trimmed) so that each call stays under it.
   */
  'context_budget_tokens': (number);
  /**
   * Tokens of the newest messages always kept verbatim when older ones are
   * summarized; 0 means a quarter of the budget. Must be below the budget.
   */
  'context_keep_recent_tokens': (number);
  /**
   * Instruction of the summary call that compresses older messages, at most
   * 8000 characters; empty uses the gateway's default prompt.
   */
  'context_summary_prompt': (string);
  /**
   * At the end of the run, store a short summary of what was learned as the
   * user's long-term memory (one model call). Ignored with disable_memory.
   */
  'session_memory': (boolean);
  /**
   * Per tool call timeout, in (0s, 3600s]; unset uses the ToolService default.
   */
  'tool_timeout': (_google_protobuf_Duration__Output | null);
  /**
   * A JSON Schema (an object) the final answer must satisfy. The gateway adds
   * a finish tool ("final_answer") with this schema, requires tool use until a
   * call validates, feeds validation errors back, and puts the validated
   * object in RunFinal.structured_output. Its references must point inside
   * it ("#/$defs/Name"): nothing it names is fetched or read, and any other
   * reference is INVALID_ARGUMENT.
   */
  'output_schema': (_google_protobuf_Struct__Output | null);
  '_temperature'?: "temperature";
}
