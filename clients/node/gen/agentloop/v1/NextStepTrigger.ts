// Original file: protos/agentloop/v1/common.proto

/**
 * When a flow-guidance rule applies.
 */
export const NextStepTrigger = {
  /**
   * Not set; rejected when a tool is registered.
   */
  NEXT_STEP_TRIGGER_UNSPECIFIED: 'NEXT_STEP_TRIGGER_UNSPECIFIED',
  /**
   * After the tool's call succeeded.
   */
  NEXT_STEP_TRIGGER_SUCCESS: 'NEXT_STEP_TRIGGER_SUCCESS',
  /**
   * After the tool's call returned an error result.
   */
  NEXT_STEP_TRIGGER_ERROR: 'NEXT_STEP_TRIGGER_ERROR',
} as const;

/**
 * When a flow-guidance rule applies.
 */
export type NextStepTrigger =
  /**
   * Not set; rejected when a tool is registered.
   */
  | 'NEXT_STEP_TRIGGER_UNSPECIFIED'
  | 0
  /**
   * After the tool's call succeeded.
   */
  | 'NEXT_STEP_TRIGGER_SUCCESS'
  | 1
  /**
   * After the tool's call returned an error result.
   */
  | 'NEXT_STEP_TRIGGER_ERROR'
  | 2

/**
 * When a flow-guidance rule applies.
 */
export type NextStepTrigger__Output = typeof NextStepTrigger[keyof typeof NextStepTrigger]
