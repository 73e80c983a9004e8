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
}
