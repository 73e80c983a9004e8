// Original file: protos/agentloop/v1/agent.proto

import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * A fact remembered for a user across threads.
 */
export interface Memory {
  /**
   * Identifier.
   */
  'memory_id'?: (string);
  /**
   * The fact, as the user stated it.
   */
  'text'?: (string);
  /**
   * When it was stored.
   */
  'created_at'?: (_google_protobuf_Timestamp | null);
}

/**
 * A fact remembered for a user across threads.
 */
export interface Memory__Output {
  /**
   * Identifier.
   */
  'memory_id': (string);
  /**
   * The fact, as the user stated it.
   */
  'text': (string);
  /**
   * When it was stored.
   */
  'created_at': (_google_protobuf_Timestamp__Output | null);
}
