// Original file: protos/agentloop/v1/tools.proto


/**
 * Request of ToolService.ListTools.
 */
export interface ListToolsRequest {
  /**
   * Only list these tools; empty lists all. Unknown names are ignored.
   */
  'names'?: (string)[];
}

/**
 * Request of ToolService.ListTools.
 */
export interface ListToolsRequest__Output {
  /**
   * Only list these tools; empty lists all. Unknown names are ignored.
   */
  'names': (string)[];
}
