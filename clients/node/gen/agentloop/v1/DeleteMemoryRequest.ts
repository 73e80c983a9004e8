// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.DeleteMemory.
 */
export interface DeleteMemoryRequest {
  /**
   * Whose memory.
   */
  'user_id'?: (string);
  /**
   * Which one; required.
   */
  'memory_id'?: (string);
}

/**
 * Request of Agent.DeleteMemory.
 */
export interface DeleteMemoryRequest__Output {
  /**
   * Whose memory.
   */
  'user_id': (string);
  /**
   * Which one; required.
   */
  'memory_id': (string);
}
