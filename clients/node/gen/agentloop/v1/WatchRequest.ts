// Original file: protos/agentloop/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Request of Agent.Watch.
 */
export interface WatchRequest {
  /**
   * The run; required.
   */
  'run_id'?: (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id'?: (string);
  /**
   * Only events with a larger sequence; 0 streams from the start.
   */
  'after_sequence'?: (number | string | Long);
}

/**
 * Request of Agent.Watch.
 */
export interface WatchRequest__Output {
  /**
   * The run; required.
   */
  'run_id': (string);
  /**
   * The caller; must own the run's thread.
   */
  'user_id': (string);
  /**
   * Only events with a larger sequence; 0 streams from the start.
   */
  'after_sequence': (string);
}
