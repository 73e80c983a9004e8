// Original file: protos/agentloop/v1/agent.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';
import type { RunStatus as _agentloop_v1_RunStatus, RunStatus__Output as _agentloop_v1_RunStatus__Output } from '../../agentloop/v1/RunStatus';

/**
 * A thread as ListThreads shows it.
 */
export interface ThreadSummary {
  /**
   * The thread.
   */
  'thread_id'?: (string);
  /**
   * When it was created.
   */
  'created_at'?: (_google_protobuf_Timestamp | null);
  /**
   * When it last changed.
   */
  'updated_at'?: (_google_protobuf_Timestamp | null);
  /**
   * Messages in its conversation.
   */
  'message_count'?: (number);
  /**
   * The start of its last message, at most 200 characters; empty for a
   * thread without messages.
   */
  'preview'?: (string);
  /**
   * Its latest run; empty for a thread without runs.
   */
  'latest_run_id'?: (string);
  /**
   * The latest run's status; RUN_STATUS_UNSPECIFIED without runs.
   */
  'latest_run_status'?: (_agentloop_v1_RunStatus);
}

/**
 * A thread as ListThreads shows it.
 */
export interface ThreadSummary__Output {
  /**
   * The thread.
   */
  'thread_id': (string);
  /**
   * When it was created.
   */
  'created_at': (_google_protobuf_Timestamp__Output | null);
  /**
   * When it last changed.
   */
  'updated_at': (_google_protobuf_Timestamp__Output | null);
  /**
   * Messages in its conversation.
   */
  'message_count': (number);
  /**
   * The start of its last message, at most 200 characters; empty for a
   * thread without messages.
   */
  'preview': (string);
  /**
   * Its latest run; empty for a thread without runs.
   */
  'latest_run_id': (string);
  /**
   * The latest run's status; RUN_STATUS_UNSPECIFIED without runs.
   */
  'latest_run_status': (_agentloop_v1_RunStatus__Output);
}
