// Original file: protos/agentloop/v1/agent.proto

/**
 * Which model calls stream their tokens to the client.
 */
export const StreamMode = {
  /**
   * Not set: the same as STREAM_MODE_FINAL_ONLY.
   */
  STREAM_MODE_UNSPECIFIED: 'STREAM_MODE_UNSPECIFIED',
  /**
   * Planning steps are non-streaming so the model can call tools round after
   * round; once a step returns no tool calls, the final answer is generated
   * again with tools disabled and streamed token by token.
   */
  STREAM_MODE_FINAL_ONLY: 'STREAM_MODE_FINAL_ONLY',
  /**
   * Every step is streamed; tokens of planning steps reach the client too,
   * and the answering step is not repeated.
   */
  STREAM_MODE_ALL_STEPS: 'STREAM_MODE_ALL_STEPS',
  /**
   * No step is streamed; the answer arrives whole in the final event.
   */
  STREAM_MODE_NONE: 'STREAM_MODE_NONE',
} as const;

/**
 * Which model calls stream their tokens to the client.
 */
export type StreamMode =
  /**
   * Not set: the same as STREAM_MODE_FINAL_ONLY.
   */
  | 'STREAM_MODE_UNSPECIFIED'
  | 0
  /**
   * Planning steps are non-streaming so the model can call tools round after
   * round; once a step returns no tool calls, the final answer is generated
   * again with tools disabled and streamed token by token.
   */
  | 'STREAM_MODE_FINAL_ONLY'
  | 1
  /**
   * Every step is streamed; tokens of planning steps reach the client too,
   * and the answering step is not repeated.
   */
  | 'STREAM_MODE_ALL_STEPS'
  | 2
  /**
   * No step is streamed; the answer arrives whole in the final event.
   */
  | 'STREAM_MODE_NONE'
  | 3

/**
 * Which model calls stream their tokens to the client.
 */
export type StreamMode__Output = typeof StreamMode[keyof typeof StreamMode]
