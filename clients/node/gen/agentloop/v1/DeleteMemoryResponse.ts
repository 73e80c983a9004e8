// Original file: protos/agentloop/v1/agent.proto


/**
 * Response of Agent.DeleteMemory.
 */
export interface DeleteMemoryResponse {
}

/**
 * Response of Agent.DeleteMemory.
 */
export interface DeleteMemoryResponse__Output {
}
