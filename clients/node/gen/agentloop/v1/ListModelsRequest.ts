// Original file: protos/agentloop/v1/reasoner.proto


/**
 * Request of Reasoner.ListModels.
 */
export interface ListModelsRequest {
}

/**
 * Request of Reasoner.ListModels.
 */
export interface ListModelsRequest__Output {
}
