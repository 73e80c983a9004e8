// Original file: protos/agentloop/v1/agent.proto

import type { Code as _google_rpc_Code, Code__Output as _google_rpc_Code__Output } from '../../google/rpc/Code';

/**
 * A run ended because something failed and could not be retried.
 */
export interface RunError {
  /**
   * What failed, written for a person.
   */
  'message'?: (string);
  /**
   * The node that was running.
   */
  'node'?: (string);
  /**
   * Status code of the cause, for example UNAVAILABLE.
   */
  'code'?: (_google_rpc_Code);
}

/**
 * A run ended because something failed and could not be retried.
 */
export interface RunError__Output {
  /**
   * What failed, written for a person.
   */
  'message': (string);
  /**
   * The node that was running.
   */
  'node': (string);
  /**
   * Status code of the cause, for example UNAVAILABLE.
   */
  'code': (_google_rpc_Code__Output);
}
