// Original file: protos/agentloop/v1/agent.proto

import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { RunOptions as _agentloop_v1_RunOptions, RunOptions__Output as _agentloop_v1_RunOptions__Output } from '../../agentloop/v1/RunOptions';

/**
 * Request of Agent.Invoke; the same fields as RunRequest.
 */
export interface InvokeRequest {
  /**
   * The user's question or instruction; must not be empty.
   */
  'input'?: (string);
  /**
   * Who is asking. Threads belong to the user that created them; another
   * user gets NOT_FOUND. Empty means the anonymous user "".
   */
  'user_id'?: (string);
  /**
   * Conversation identifier; empty starts a new thread.
   */
  'thread_id'?: (string);
  /**
   * Earlier turns to seed a NEW thread with (no system messages).
   */
  'history'?: (_agentloop_v1_Message)[];
  /**
   * Per-run settings; stream_mode is ignored.
   */
  'options'?: (_agentloop_v1_RunOptions | null);
  /**
   * Idempotency key, as RunRequest.request_id (one namespace for both): the
   * same key again returns the outcome of the run it started.
   */
  'request_id'?: (string);
}

/**
 * Request of Agent.Invoke; the same fields as RunRequest.
 */
export interface InvokeRequest__Output {
  /**
   * The user's question or instruction; must not be empty.
   */
  'input': (string);
  /**
   * Who is asking. Threads belong to the user that created them; another
   * user gets NOT_FOUND. Empty means the anonymous user "".
   */
  'user_id': (string);
  /**
   * Conversation identifier; empty starts a new thread.
   */
  'thread_id': (string);
  /**
   * Earlier turns to seed a NEW thread with (no system messages).
   */
  'history': (_agentloop_v1_Message__Output)[];
  /**
   * Per-run settings; stream_mode is ignored.
   */
  'options': (_agentloop_v1_RunOptions__Output | null);
  /**
   * Idempotency key, as RunRequest.request_id (one namespace for both): the
   * same key again returns the outcome of the run it started.
   */
  'request_id': (string);
}
