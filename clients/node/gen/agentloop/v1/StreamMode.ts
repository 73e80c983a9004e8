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
   * Every step is streamed, since whether a step is the answer is known only
   * when it ends: the answer's tokens reach the client as the model writes
   * them and no step is generated twice (one model call per step). Text a
   * step wrote before calling tools is followed, before its tool events, by a
   * Decision of kind "planning_text" naming the range of llm_token sequence
   * numbers that were planning, so a client can hide or relabel it. With an
   * output schema, only the reply-text call streams.
   */
  STREAM_MODE_FINAL_ONLY: 'STREAM_MODE_FINAL_ONLY',
  /**
   * Every step is streamed, structured-output steps too; planning text is
   * marked the same way.
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
   * Every step is streamed, since whether a step is the answer is known only
   * when it ends: the answer's tokens reach the client as the model writes
   * them and no step is generated twice (one model call per step). Text a
   * step wrote before calling tools is followed, before its tool events, by a
   * Decision of kind "planning_text" naming the range of llm_token sequence
   * numbers that were planning, so a client can hide or relabel it. With an
   * output schema, only the reply-text call streams.
   */
  | 'STREAM_MODE_FINAL_ONLY'
  | 1
  /**
   * Every step is streamed, structured-output steps too; planning text is
   * marked the same way.
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
