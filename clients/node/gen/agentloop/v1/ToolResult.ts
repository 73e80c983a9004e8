// Original file: protos/agentloop/v1/common.proto

import type { ToolErrorKind as _agentloop_v1_ToolErrorKind, ToolErrorKind__Output as _agentloop_v1_ToolErrorKind__Output } from '../../agentloop/v1/ToolErrorKind';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration';

/**
 * The outcome of one tool call. Every ToolCall gets exactly one ToolResult.
 */
export interface ToolResult {
  /**
   * The ToolCall.id this result answers.
   */
  'tool_call_id'?: (string);
  /**
   * The tool's name, copied from the call.
   */
  'name'?: (string);
  /**
   * The value (JSON text or plain text) or, when is_error is set, an error
   * message written for the model to read and correct itself.
   */
  'content'?: (string);
  /**
   * True when the call failed; error_kind says how.
   */
  'is_error'?: (boolean);
  /**
   * TOOL_ERROR_KIND_NONE on success, the category of the failure otherwise.
   */
  'error_kind'?: (_agentloop_v1_ToolErrorKind);
  /**
   * Wall-clock time the call took.
   */
  'duration'?: (_google_protobuf_Duration | null);
}

/**
 * The outcome of one tool call. Every ToolCall gets exactly one ToolResult.
 */
export interface ToolResult__Output {
  /**
   * The ToolCall.id this result answers.
   */
  'tool_call_id': (string);
  /**
   * The tool's name, copied from the call.
   */
  'name': (string);
  /**
   * The value (JSON text or plain text) or, when is_error is set, an error
   * message written for the model to read and correct itself.
   */
  'content': (string);
  /**
   * True when the call failed; error_kind says how.
   */
  'is_error': (boolean);
  /**
   * TOOL_ERROR_KIND_NONE on success, the category of the failure otherwise.
   */
  'error_kind': (_agentloop_v1_ToolErrorKind__Output);
  /**
   * Wall-clock time the call took.
   */
  'duration': (_google_protobuf_Duration__Output | null);
}
