// Original file: protos/agentloop/v1/common.proto

/**
 * How the model may use the offered tools.
 */
export const ToolChoiceMode = {
  /**
   * Not set: the same as TOOL_CHOICE_MODE_AUTO.
   */
  TOOL_CHOICE_MODE_UNSPECIFIED: 'TOOL_CHOICE_MODE_UNSPECIFIED',
  /**
   * The model decides whether to call tools.
   */
  TOOL_CHOICE_MODE_AUTO: 'TOOL_CHOICE_MODE_AUTO',
  /**
   * The model must call at least one tool.
   */
  TOOL_CHOICE_MODE_REQUIRED: 'TOOL_CHOICE_MODE_REQUIRED',
  /**
   * The model must not call tools.
   */
  TOOL_CHOICE_MODE_NONE: 'TOOL_CHOICE_MODE_NONE',
} as const;

/**
 * How the model may use the offered tools.
 */
export type ToolChoiceMode =
  /**
   * Not set: the same as TOOL_CHOICE_MODE_AUTO.
   */
  | 'TOOL_CHOICE_MODE_UNSPECIFIED'
  | 0
  /**
   * The model decides whether to call tools.
   */
  | 'TOOL_CHOICE_MODE_AUTO'
  | 1
  /**
   * The model must call at least one tool.
   */
  | 'TOOL_CHOICE_MODE_REQUIRED'
  | 2
  /**
   * The model must not call tools.
   */
  | 'TOOL_CHOICE_MODE_NONE'
  | 3

/**
 * How the model may use the offered tools.
 */
export type ToolChoiceMode__Output = typeof ToolChoiceMode[keyof typeof ToolChoiceMode]
