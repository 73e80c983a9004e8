// Original file: protos/agentloop/v1/agent.proto


/**
 * Response of Agent.ForkThread.
 */
export interface ForkThreadResponse {
  /**
   * The new thread; run on it with RunRequest.thread_id.
   */
  'thread_id'?: (string);
  /**
   * Messages in it: the conversation as of the checkpoint, plus one error
   * tool result per tool call still open there.
   */
  'message_count'?: (number);
}

/**
 * Response of Agent.ForkThread.
 */
export interface ForkThreadResponse__Output {
  /**
   * The new thread; run on it with RunRequest.thread_id.
   */
  'thread_id': (string);
  /**
   * Messages in it: the conversation as of the checkpoint, plus one error
   * tool result per tool call still open there.
   */
  'message_count': (number);
}
