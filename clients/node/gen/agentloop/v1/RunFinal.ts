// Original file: protos/agentloop/v1/agent.proto

import type { RunMetadata as _agentloop_v1_RunMetadata, RunMetadata__Output as _agentloop_v1_RunMetadata__Output } from '../../agentloop/v1/RunMetadata';
import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from '../../agentloop/v1/Message';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from '../../google/protobuf/Struct';

/**
 * The outcome of a run.
 */
export interface RunFinal {
  /**
   * The answer for the user.
   */
  'final_reply'?: (string);
  /**
   * Counters of the run.
   */
  'metadata'?: (_agentloop_v1_RunMetadata | null);
  /**
   * The messages THIS run added to the thread, oldest first: its question,
   * the model's turns and the tool results. The earlier conversation (and a
   * new thread's RunRequest.history, which the client sent) is not repeated:
   * read it with GetThread, a page at a time. Its size is bounded by the run,
   * never by the thread's length.
   */
  'run_messages'?: (_agentloop_v1_Message)[];
  /**
   * With RunOptions.output_schema: the validated answer object.
   */
  'structured_output'?: (_google_protobuf_Struct | null);
  /**
   * True when final_reply holds only the start of the answer: the event (or
   * Invoke's response) stays under 4 MiB, the default receive limit of gRPC
   * clients. The whole answer is the run's last assistant message (GetThread).
   */
  'final_reply_truncated'?: (boolean);
  /**
   * True when run_messages holds only the first messages the run added, cut
   * to keep the event under 4 MiB; GetThread pages the rest (from
   * total_messages minus the run's count, or from the start).
   */
  'run_messages_truncated'?: (boolean);
}

/**
 * The outcome of a run.
 */
export interface RunFinal__Output {
  /**
   * The answer for the user.
   */
  'final_reply': (string);
  /**
   * Counters of the run.
   */
  'metadata': (_agentloop_v1_RunMetadata__Output | null);
  /**
   * The messages THIS run added to the thread, oldest first: its question,
   * the model's turns and the tool results. The earlier conversation (and a
   * new thread's RunRequest.history, which the client sent) is not repeated:
   * read it with GetThread, a page at a time. Its size is bounded by the run,
   * never by the thread's length.
   */
  'run_messages': (_agentloop_v1_Message__Output)[];
  /**
   * With RunOptions.output_schema: the validated answer object.
   */
  'structured_output': (_google_protobuf_Struct__Output | null);
  /**
   * True when final_reply holds only the start of the answer: the event (or
   * Invoke's response) stays under 4 MiB, the default receive limit of gRPC
   * clients. The whole answer is the run's last assistant message (GetThread).
   */
  'final_reply_truncated': (boolean);
  /**
   * True when run_messages holds only the first messages the run added, cut
   * to keep the event under 4 MiB; GetThread pages the rest (from
   * total_messages minus the run's count, or from the start).
   */
  'run_messages_truncated': (boolean);
}
