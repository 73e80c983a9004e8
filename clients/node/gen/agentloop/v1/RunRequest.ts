// Original file: protos/agentloop/v1/agent.proto

import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { RunOptions as _agentloop_v1_RunOptions, RunOptions__Output as _agentloop_v1_RunOptions__Output } from '../../agentloop/v1/RunOptions';

/**
 * Request of Agent.Run.
 */
export interface RunRequest {
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
   * Conversation identifier; empty starts a new thread (the gateway assigns
   * an id). An existing thread continues its stored conversation.
   */
  'thread_id'?: (string);
  /**
   * Earlier turns to seed a NEW thread with, oldest first (no system
   * messages). Rejected for a thread that already has messages.
   */
  'history'?: (_agentloop_v1_Message)[];
  /**
   * Per-run settings.
   */
  'options'?: (_agentloop_v1_RunOptions | null);
  /**
   * Idempotency key chosen by the client (AIP-155), for example a UUID; at
   * most 256 characters, no control characters. The same key again from the
   * same user attaches to the run it started, streaming that run's events
   * from the start (Watch goes on from any sequence), instead of starting
   * another; the rest of the request is then not looked at. Empty never
   * deduplicates. A key is kept as long as its run.
   */
  'request_id'?: (string);
}

/**
 * Request of Agent.Run.
 */
export interface RunRequest__Output {
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
   * Conversation identifier; empty starts a new thread (the gateway assigns
   * an id). An existing thread continues its stored conversation.
   */
  'thread_id': (string);
  /**
   * Earlier turns to seed a NEW thread with, oldest first (no system
   * messages). Rejected for a thread that already has messages.
   */
  'history': (_agentloop_v1_Message__Output)[];
  /**
   * Per-run settings.
   */
  'options': (_agentloop_v1_RunOptions__Output | null);
  /**
   * Idempotency key chosen by the client (AIP-155), for example a UUID; at
   * most 256 characters, no control characters. The same key again from the
   * same user attaches to the run it started, streaming that run's events
   * from the start (Watch goes on from any sequence), instead of starting
   * another; the rest of the request is then not looked at. Empty never
   * deduplicates. A key is kept as long as its run.
   */
  'request_id': (string);
}
