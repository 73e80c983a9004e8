// Original file: protos/agentloop/v1/agent.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * A saved point of a run: written after a node finished, before the next starts.
 */
export interface Checkpoint {
  /**
   * Identifier, usable with GetThreadRequest.checkpoint_id ("<run_id>:<index>").
   */
  'checkpoint_id'?: (string);
  /**
   * The run.
   */
  'run_id'?: (string);
  /**
   * Position of the checkpoint in its run, from 1.
   */
  'index'?: (number);
  /**
   * The node that had just finished.
   */
  'node'?: (string);
  /**
   * The node that runs next ("" when the run ended there).
   */
  'next_node'?: (string);
  /**
   * Tool rounds completed at this point.
   */
  'step'?: (number);
  /**
   * Messages the thread held at this point (the system prompt excluded).
   */
  'message_count'?: (number);
  /**
   * Size of the stored delta in bytes (new messages + counters).
   */
  'delta_bytes'?: (number);
  /**
   * When it was written.
   */
  'created_at'?: (_google_protobuf_Timestamp | null);
}

/**
 * A saved point of a run: written after a node finished, before the next starts.
 */
export interface Checkpoint__Output {
  /**
   * Identifier, usable with GetThreadRequest.checkpoint_id ("<run_id>:<index>").
   */
  'checkpoint_id': (string);
  /**
   * The run.
   */
  'run_id': (string);
  /**
   * Position of the checkpoint in its run, from 1.
   */
  'index': (number);
  /**
   * The node that had just finished.
   */
  'node': (string);
  /**
   * The node that runs next ("" when the run ended there).
   */
  'next_node': (string);
  /**
   * Tool rounds completed at this point.
   */
  'step': (number);
  /**
   * Messages the thread held at this point (the system prompt excluded).
   */
  'message_count': (number);
  /**
   * Size of the stored delta in bytes (new messages + counters).
   */
  'delta_bytes': (number);
  /**
   * When it was written.
   */
  'created_at': (_google_protobuf_Timestamp__Output | null);
}
