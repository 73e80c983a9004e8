// Original file: protos/agentloop/v1/common.proto

/**
 * Who wrote a message in a conversation.
 */
export const Role = {
  /**
   * Not set; rejected by every service with INVALID_ARGUMENT.
   */
  ROLE_UNSPECIFIED: 'ROLE_UNSPECIFIED',
  /**
   * Instructions that frame the whole conversation.
   */
  ROLE_SYSTEM: 'ROLE_SYSTEM',
  /**
   * A human (or calling program) turn.
   */
  ROLE_USER: 'ROLE_USER',
  /**
   * A model turn: text, reasoning and/or tool calls.
   */
  ROLE_ASSISTANT: 'ROLE_ASSISTANT',
  /**
   * The result of one tool call, answering the call named by tool_call_id.
   */
  ROLE_TOOL: 'ROLE_TOOL',
} as const;

/**
 * Who wrote a message in a conversation.
 */
export type Role =
  /**
   * Not set; rejected by every service with INVALID_ARGUMENT.
   */
  | 'ROLE_UNSPECIFIED'
  | 0
  /**
   * Instructions that frame the whole conversation.
   */
  | 'ROLE_SYSTEM'
  | 1
  /**
   * A human (or calling program) turn.
   */
  | 'ROLE_USER'
  | 2
  /**
   * A model turn: text, reasoning and/or tool calls.
   */
  | 'ROLE_ASSISTANT'
  | 3
  /**
   * The result of one tool call, answering the call named by tool_call_id.
   */
  | 'ROLE_TOOL'
  | 4

/**
 * Who wrote a message in a conversation.
 */
export type Role__Output = typeof Role[keyof typeof Role]
