// Original file: protos/agentloop/v1/agent.proto

import type { RunStatus as _agentloop_v1_RunStatus, RunStatus__Output as _agentloop_v1_RunStatus__Output } from '../../agentloop/v1/RunStatus';
import type { RunMetadata as _agentloop_v1_RunMetadata, RunMetadata__Output as _agentloop_v1_RunMetadata__Output } from '../../agentloop/v1/RunMetadata';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * A run as stored: its identity, status and counters at one checkpoint.
 */
export interface RunInfo {
  /**
   * The run.
   */
  'run_id'?: (string);
  /**
   * Its thread.
   */
  'thread_id'?: (string);
  /**
   * Lifecycle status.
   */
  'status'?: (_agentloop_v1_RunStatus);
  /**
   * Counters and stop reason so far (final values once the run ended).
   */
  'metadata'?: (_agentloop_v1_RunMetadata | null);
  /**
   * The step limit of the run.
   */
  'max_steps'?: (number);
  /**
   * The reply, once the run ended. In ListRuns a preview of its first
   * 1,000 characters; in GetThread its first 512 KiB. final_reply_truncated
   * says when it was cut.
   */
  'final_reply'?: (string);
  /**
   * Node the run will execute next ("" once it ended).
   */
  'next_node'?: (string);
  /**
   * Checkpoint this state was read at.
   */
  'checkpoint_id'?: (string);
  /**
   * Gateway instance holding the run's lease; empty when none does.
   */
  'owner'?: (string);
  /**
   * When the run was created.
   */
  'created_at'?: (_google_protobuf_Timestamp | null);
  /**
   * The request_id the run was started with; empty when none.
   */
  'request_id'?: (string);
  /**
   * True when final_reply holds only the start of the reply. The whole reply
   * is the run's last assistant message: GetThread with this checkpoint_id
   * pages the conversation as of then.
   */
  'final_reply_truncated'?: (boolean);
}

/**
 * A run as stored: its identity, status and counters at one checkpoint.
 */
export interface RunInfo__Output {
  /**
   * The run.
   */
  'run_id': (string);
  /**
   * Its thread.
   */
  'thread_id': (string);
  /**
   * Lifecycle status.
   */
  'status': (_agentloop_v1_RunStatus__Output);
  /**
   * Counters and stop reason so far (final values once the run ended).
   */
  'metadata': (_agentloop_v1_RunMetadata__Output | null);
  /**
   * The step limit of the run.
   */
  'max_steps': (number);
  /**
   * The reply, once the run ended. In ListRuns a preview of its first
   * 1,000 characters; in GetThread its first 512 KiB. final_reply_truncated
   * says when it was cut.
   */
  'final_reply': (string);
  /**
   * Node the run will execute next ("" once it ended).
   */
  'next_node': (string);
  /**
   * Checkpoint this state was read at.
   */
  'checkpoint_id': (string);
  /**
   * Gateway instance holding the run's lease; empty when none does.
   */
  'owner': (string);
  /**
   * When the run was created.
   */
  'created_at': (_google_protobuf_Timestamp__Output | null);
  /**
   * The request_id the run was started with; empty when none.
   */
  'request_id': (string);
  /**
   * True when final_reply holds only the start of the reply. The whole reply
   * is the run's last assistant message: GetThread with this checkpoint_id
   * pages the conversation as of then.
   */
  'final_reply_truncated': (boolean);
}
