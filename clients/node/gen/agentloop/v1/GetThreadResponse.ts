// Original file: protos/agentloop/v1/agent.proto

import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { RunInfo as _agentloop_v1_RunInfo, RunInfo__Output as _agentloop_v1_RunInfo__Output } from '../../agentloop/v1/RunInfo';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from '../../google/protobuf/Timestamp';

/**
 * Response of Agent.GetThread.
 */
export interface GetThreadResponse {
  /**
   * The thread.
   */
  'thread_id'?: (string);
  /**
   * Its owner.
   */
  'user_id'?: (string);
  /**
   * One page of the conversation (as of the checkpoint when one was named),
   * oldest first, system prompts excluded.
   */
  'messages'?: (_agentloop_v1_Message)[];
  /**
   * State of the latest run (or of the checkpoint's run); unset for a thread without runs.
   */
  'state'?: (_agentloop_v1_RunInfo | null);
  /**
   * When the thread was created.
   */
  'created_at'?: (_google_protobuf_Timestamp | null);
  /**
   * When the thread last changed.
   */
  'updated_at'?: (_google_protobuf_Timestamp | null);
  /**
   * Token for the next page of messages; empty on the last page.
   */
  'next_page_token'?: (string);
  /**
   * Messages in the whole conversation (as of the checkpoint).
   */
  'total_messages'?: (number);
  /**
   * True when the first message of this page is the rest of the previous
   * page's last message (which was cut to fit): append its content and
   * reasoning_content to that message's; its other fields repeat the
   * message's role, tool_call_id and name, and its tool_calls are empty.
   */
  'first_message_continued'?: (boolean);
  /**
   * True when the last message of this page is cut to fit: the next page
   * starts with its rest (first_message_continued).
   */
  'last_message_continues'?: (boolean);
}

/**
 * Response of Agent.GetThread.
 */
export interface GetThreadResponse__Output {
  /**
   * The thread.
   */
  'thread_id': (string);
  /**
   * Its owner.
   */
  'user_id': (string);
  /**
   * One page of the conversation (as of the checkpoint when one was named),
   * oldest first, system prompts excluded.
   */
  'messages': (_agentloop_v1_Message__Output)[];
  /**
   * State of the latest run (or of the checkpoint's run); unset for a thread without runs.
   */
  'state': (_agentloop_v1_RunInfo__Output | null);
  /**
   * When the thread was created.
   */
  'created_at': (_google_protobuf_Timestamp__Output | null);
  /**
   * When the thread last changed.
   */
  'updated_at': (_google_protobuf_Timestamp__Output | null);
  /**
   * Token for the next page of messages; empty on the last page.
   */
  'next_page_token': (string);
  /**
   * Messages in the whole conversation (as of the checkpoint).
   */
  'total_messages': (number);
  /**
   * True when the first message of this page is the rest of the previous
   * page's last message (which was cut to fit): append its content and
   * reasoning_content to that message's; its other fields repeat the
   * message's role, tool_call_id and name, and its tool_calls are empty.
   */
  'first_message_continued': (boolean);
  /**
   * True when the last message of this page is cut to fit: the next page
   * starts with its rest (first_message_continued).
   */
  'last_message_continues': (boolean);
}
