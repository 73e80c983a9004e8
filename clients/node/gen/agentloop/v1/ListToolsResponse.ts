// Original file: protos/agentloop/v1/tools.proto

import type { ToolSpec as _agentloop_v1_ToolSpec, ToolSpec__Output as _agentloop_v1_ToolSpec__Output } from '../../agentloop/v1/ToolSpec';

/**
 * Response of ToolService.ListTools.
 */
export interface ListToolsResponse {
  /**
   * The tools, sorted by name.
   */
  'tools'?: (_agentloop_v1_ToolSpec)[];
}

/**
 * Response of ToolService.ListTools.
 */
export interface ListToolsResponse__Output {
  /**
   * The tools, sorted by name.
   */
  'tools': (_agentloop_v1_ToolSpec__Output)[];
}
