// Original file: protos/agentloop/v1/agent.proto


/**
 * Request of Agent.ListMemories.
 */
export interface ListMemoriesRequest {
  /**
   * Whose memories.
   */
  'user_id'?: (string);
}

/**
 * Request of Agent.ListMemories.
 */
export interface ListMemoriesRequest__Output {
  /**
   * Whose memories.
   */
  'user_id': (string);
}
