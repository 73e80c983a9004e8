// Original file: protos/agentloop/v1/common.proto

/**
 * Why a tool call produced an error result instead of a value.
 * 
 * Every result carries an explicit kind: TOOL_ERROR_KIND_NONE for a success,
 * one of the others for a failure. UNSPECIFIED (0) only means "not set" (a
 * sender that predates NONE); readers then go by is_error.
 */
export const ToolErrorKind = {
  /**
   * Not set; never sent by the ToolService or the gateway.
   */
  TOOL_ERROR_KIND_UNSPECIFIED: 'TOOL_ERROR_KIND_UNSPECIFIED',
  /**
   * The call succeeded (is_error is false).
   */
  TOOL_ERROR_KIND_NONE: 'TOOL_ERROR_KIND_NONE',
  /**
   * No tool with that name is registered.
   */
  TOOL_ERROR_KIND_UNKNOWN_TOOL: 'TOOL_ERROR_KIND_UNKNOWN_TOOL',
  /**
   * arguments_json is not a JSON object.
   */
  TOOL_ERROR_KIND_MALFORMED_ARGUMENTS: 'TOOL_ERROR_KIND_MALFORMED_ARGUMENTS',
  /**
   * The arguments parsed but do not match the tool's schema.
   */
  TOOL_ERROR_KIND_INVALID_ARGUMENTS: 'TOOL_ERROR_KIND_INVALID_ARGUMENTS',
  /**
   * The call ran longer than its timeout and was cancelled.
   */
  TOOL_ERROR_KIND_TIMEOUT: 'TOOL_ERROR_KIND_TIMEOUT',
  /**
   * The tool raised an exception.
   */
  TOOL_ERROR_KIND_EXCEPTION: 'TOOL_ERROR_KIND_EXCEPTION',
  /**
   * The call was cancelled before it finished (batch or run cancelled).
   */
  TOOL_ERROR_KIND_CANCELLED: 'TOOL_ERROR_KIND_CANCELLED',
  /**
   * The ToolService could not be reached, so the call never ran.
   */
  TOOL_ERROR_KIND_UNAVAILABLE: 'TOOL_ERROR_KIND_UNAVAILABLE',
  /**
   * A human rejected the call (see Agent.Resume); the content says why.
   */
  TOOL_ERROR_KIND_REJECTED: 'TOOL_ERROR_KIND_REJECTED',
  /**
   * The result was larger than the ToolService sends (AGENTLOOP_MAX_RESULT_BYTES,
   * or the batch's share of the message limit); the content says how to ask for less.
   */
  TOOL_ERROR_KIND_TOO_LARGE: 'TOOL_ERROR_KIND_TOO_LARGE',
} as const;

/**
 * Why a tool call produced an error result instead of a value.
 * 
 * Every result carries an explicit kind: TOOL_ERROR_KIND_NONE for a success,
 * one of the others for a failure. UNSPECIFIED (0) only means "not set" (a
 * sender that predates NONE); readers then go by is_error.
 */
export type ToolErrorKind =
  /**
   * Not set; never sent by the ToolService or the gateway.
   */
  | 'TOOL_ERROR_KIND_UNSPECIFIED'
  | 0
  /**
   * The call succeeded (is_error is false).
   */
  | 'TOOL_ERROR_KIND_NONE'
  | 10
  /**
   * No tool with that name is registered.
   */
  | 'TOOL_ERROR_KIND_UNKNOWN_TOOL'
  | 1
  /**
   * arguments_json is not a JSON object.
   */
  | 'TOOL_ERROR_KIND_MALFORMED_ARGUMENTS'
  | 2
  /**
   * The arguments parsed but do not match the tool's schema.
   */
  | 'TOOL_ERROR_KIND_INVALID_ARGUMENTS'
  | 3
  /**
   * The call ran longer than its timeout and was cancelled.
   */
  | 'TOOL_ERROR_KIND_TIMEOUT'
  | 4
  /**
   * The tool raised an exception.
   */
  | 'TOOL_ERROR_KIND_EXCEPTION'
  | 5
  /**
   * The call was cancelled before it finished (batch or run cancelled).
   */
  | 'TOOL_ERROR_KIND_CANCELLED'
  | 6
  /**
   * The ToolService could not be reached, so the call never ran.
   */
  | 'TOOL_ERROR_KIND_UNAVAILABLE'
  | 7
  /**
   * A human rejected the call (see Agent.Resume); the content says why.
   */
  | 'TOOL_ERROR_KIND_REJECTED'
  | 8
  /**
   * The result was larger than the ToolService sends (AGENTLOOP_MAX_RESULT_BYTES,
   * or the batch's share of the message limit); the content says how to ask for less.
   */
  | 'TOOL_ERROR_KIND_TOO_LARGE'
  | 9

/**
 * Why a tool call produced an error result instead of a value.
 * 
 * Every result carries an explicit kind: TOOL_ERROR_KIND_NONE for a success,
 * one of the others for a failure. UNSPECIFIED (0) only means "not set" (a
 * sender that predates NONE); readers then go by is_error.
 */
export type ToolErrorKind__Output = typeof ToolErrorKind[keyof typeof ToolErrorKind]
