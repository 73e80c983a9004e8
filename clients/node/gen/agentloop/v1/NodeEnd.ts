// Original file: protos/agentloop/v1/agent.proto

import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration';

/**
 * A node of the loop's graph has finished.
 */
export interface NodeEnd {
  /**
   * Node name.
   */
  'node'?: (string);
  /**
   * Tool rounds completed when the node ended.
   */
  'step'?: (number);
  /**
   * Time spent in the node.
   */
  'duration'?: (_google_protobuf_Duration | null);
}

/**
 * A node of the loop's graph has finished.
 */
export interface NodeEnd__Output {
  /**
   * Node name.
   */
  'node': (string);
  /**
   * Tool rounds completed when the node ended.
   */
  'step': (number);
  /**
   * Time spent in the node.
   */
  'duration': (_google_protobuf_Duration__Output | null);
}
