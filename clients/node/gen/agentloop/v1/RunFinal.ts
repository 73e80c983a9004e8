// Original file: protos/agentloop/v1/agent.proto

import type { RunMetadata as _agentloop_v1_RunMetadata, RunMetadata__Output as _agentloop_v1_RunMetadata__Output } from '../../agentloop/v1/RunMetadata';
import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';

/**
 * The outcome of a run.
 */
export interface RunFinal {
  /**
   * The answer for the user.
   */
  'final_reply'?: (string);
  /**
   * Counters of the run.
   */
  'metadata'?: (_agentloop_v1_RunMetadata | null);
  /**
   * The conversation as it stands after the run, the system prompt excluded.
   */
  'messages'?: (_agentloop_v1_Message)[];
  /**
   * With RunOptions.output_schema_json: the validated answer object as JSON.
   */
  'structured_output_json'?: (string);
}

/**
 * The outcome of a run.
 */
export interface RunFinal__Output {
  /**
   * The answer for the user.
   */
  'final_reply': (string);
  /**
   * Counters of the run.
   */
  'metadata': (_agentloop_v1_RunMetadata__Output | null);
  /**
   * The conversation as it stands after the run, the system prompt excluded.
   */
  'messages': (_agentloop_v1_Message__Output)[];
  /**
   * With RunOptions.output_schema_json: the validated answer object as JSON.
   */
  'structured_output_json': (string);
}
