// Original file: protos/agentloop/v1/agent.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CancelRequest as _agentloop_v1_CancelRequest, CancelRequest__Output as _agentloop_v1_CancelRequest__Output } from '../../agentloop/v1/CancelRequest';
import type { CancelResponse as _agentloop_v1_CancelResponse, CancelResponse__Output as _agentloop_v1_CancelResponse__Output } from '../../agentloop/v1/CancelResponse';
import type { DeleteMemoryRequest as _agentloop_v1_DeleteMemoryRequest, DeleteMemoryRequest__Output as _agentloop_v1_DeleteMemoryRequest__Output } from '../../agentloop/v1/DeleteMemoryRequest';
import type { DeleteMemoryResponse as _agentloop_v1_DeleteMemoryResponse, DeleteMemoryResponse__Output as _agentloop_v1_DeleteMemoryResponse__Output } from '../../agentloop/v1/DeleteMemoryResponse';
import type { ForkThreadRequest as _agentloop_v1_ForkThreadRequest, ForkThreadRequest__Output as _agentloop_v1_ForkThreadRequest__Output } from '../../agentloop/v1/ForkThreadRequest';
import type { ForkThreadResponse as _agentloop_v1_ForkThreadResponse, ForkThreadResponse__Output as _agentloop_v1_ForkThreadResponse__Output } from '../../agentloop/v1/ForkThreadResponse';
import type { GetThreadRequest as _agentloop_v1_GetThreadRequest, GetThreadRequest__Output as _agentloop_v1_GetThreadRequest__Output } from '../../agentloop/v1/GetThreadRequest';
import type { GetThreadResponse as _agentloop_v1_GetThreadResponse, GetThreadResponse__Output as _agentloop_v1_GetThreadResponse__Output } from '../../agentloop/v1/GetThreadResponse';
import type { InvokeRequest as _agentloop_v1_InvokeRequest, InvokeRequest__Output as _agentloop_v1_InvokeRequest__Output } from '../../agentloop/v1/InvokeRequest';
import type { InvokeResponse as _agentloop_v1_InvokeResponse, InvokeResponse__Output as _agentloop_v1_InvokeResponse__Output } from '../../agentloop/v1/InvokeResponse';
import type { ListCheckpointsRequest as _agentloop_v1_ListCheckpointsRequest, ListCheckpointsRequest__Output as _agentloop_v1_ListCheckpointsRequest__Output } from '../../agentloop/v1/ListCheckpointsRequest';
import type { ListCheckpointsResponse as _agentloop_v1_ListCheckpointsResponse, ListCheckpointsResponse__Output as _agentloop_v1_ListCheckpointsResponse__Output } from '../../agentloop/v1/ListCheckpointsResponse';
import type { ListMemoriesRequest as _agentloop_v1_ListMemoriesRequest, ListMemoriesRequest__Output as _agentloop_v1_ListMemoriesRequest__Output } from '../../agentloop/v1/ListMemoriesRequest';
import type { ListMemoriesResponse as _agentloop_v1_ListMemoriesResponse, ListMemoriesResponse__Output as _agentloop_v1_ListMemoriesResponse__Output } from '../../agentloop/v1/ListMemoriesResponse';
import type { ListRunsRequest as _agentloop_v1_ListRunsRequest, ListRunsRequest__Output as _agentloop_v1_ListRunsRequest__Output } from '../../agentloop/v1/ListRunsRequest';
import type { ListRunsResponse as _agentloop_v1_ListRunsResponse, ListRunsResponse__Output as _agentloop_v1_ListRunsResponse__Output } from '../../agentloop/v1/ListRunsResponse';
import type { ListThreadsRequest as _agentloop_v1_ListThreadsRequest, ListThreadsRequest__Output as _agentloop_v1_ListThreadsRequest__Output } from '../../agentloop/v1/ListThreadsRequest';
import type { ListThreadsResponse as _agentloop_v1_ListThreadsResponse, ListThreadsResponse__Output as _agentloop_v1_ListThreadsResponse__Output } from '../../agentloop/v1/ListThreadsResponse';
import type { ResumeRequest as _agentloop_v1_ResumeRequest, ResumeRequest__Output as _agentloop_v1_ResumeRequest__Output } from '../../agentloop/v1/ResumeRequest';
import type { ResumeResponse as _agentloop_v1_ResumeResponse, ResumeResponse__Output as _agentloop_v1_ResumeResponse__Output } from '../../agentloop/v1/ResumeResponse';
import type { RunRequest as _agentloop_v1_RunRequest, RunRequest__Output as _agentloop_v1_RunRequest__Output } from '../../agentloop/v1/RunRequest';
import type { RunResponse as _agentloop_v1_RunResponse, RunResponse__Output as _agentloop_v1_RunResponse__Output } from '../../agentloop/v1/RunResponse';
import type { WatchRequest as _agentloop_v1_WatchRequest, WatchRequest__Output as _agentloop_v1_WatchRequest__Output } from '../../agentloop/v1/WatchRequest';
import type { WatchResponse as _agentloop_v1_WatchResponse, WatchResponse__Output as _agentloop_v1_WatchResponse__Output } from '../../agentloop/v1/WatchResponse';

/**
 * The agent loop as a service. Runs are durable: every node transition is
 * checkpointed before the next node starts, so a run survives the gateway
 * that started it and can be resumed, watched or cancelled from any gateway
 * sharing the same database.
 */
export interface AgentClient extends grpc.Client {
  /**
   * Asks a run to stop at its next safe point. Tool calls already issued get
   * a "cancelled" result so the thread stays valid for its next run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  Cancel(argument: _agentloop_v1_CancelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _agentloop_v1_CancelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _agentloop_v1_CancelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  Cancel(argument: _agentloop_v1_CancelRequest, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Asks a run to stop at its next safe point. Tool calls already issued get
   * a "cancelled" result so the thread stays valid for its next run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  cancel(argument: _agentloop_v1_CancelRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _agentloop_v1_CancelRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _agentloop_v1_CancelRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  cancel(argument: _agentloop_v1_CancelRequest, callback: grpc.requestCallback<_agentloop_v1_CancelResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Deletes one memory of a user. NOT_FOUND when it does not exist.
   */
  DeleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  DeleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  DeleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  DeleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Deletes one memory of a user. NOT_FOUND when it does not exist.
   */
  deleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  deleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  deleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  deleteMemory(argument: _agentloop_v1_DeleteMemoryRequest, callback: grpc.requestCallback<_agentloop_v1_DeleteMemoryResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Copies a thread as of one of its checkpoints into a new thread of the
   * same user (time travel: retry from an earlier point). The new thread has
   * the conversation up to that checkpoint and no runs; runs on it never
   * change the original, nor runs on the original the copy. Tool calls that
   * had no result at that checkpoint are closed in the copy with an error
   * result ("Not run: the thread was forked before this tool call
   * finished."), so the copy is a conversation every model accepts. NOT_FOUND for an
   * unknown thread or checkpoint (or another user's); ALREADY_EXISTS when
   * new_thread_id is taken.
   */
  ForkThread(argument: _agentloop_v1_ForkThreadRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  ForkThread(argument: _agentloop_v1_ForkThreadRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  ForkThread(argument: _agentloop_v1_ForkThreadRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  ForkThread(argument: _agentloop_v1_ForkThreadRequest, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Copies a thread as of one of its checkpoints into a new thread of the
   * same user (time travel: retry from an earlier point). The new thread has
   * the conversation up to that checkpoint and no runs; runs on it never
   * change the original, nor runs on the original the copy. Tool calls that
   * had no result at that checkpoint are closed in the copy with an error
   * result ("Not run: the thread was forked before this tool call
   * finished."), so the copy is a conversation every model accepts. NOT_FOUND for an
   * unknown thread or checkpoint (or another user's); ALREADY_EXISTS when
   * new_thread_id is taken.
   */
  forkThread(argument: _agentloop_v1_ForkThreadRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  forkThread(argument: _agentloop_v1_ForkThreadRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  forkThread(argument: _agentloop_v1_ForkThreadRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  forkThread(argument: _agentloop_v1_ForkThreadRequest, callback: grpc.requestCallback<_agentloop_v1_ForkThreadResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reads a thread: its conversation, a page at a time, and the state of its
   * latest run, or both as of one checkpoint. NOT_FOUND for an unknown thread
   * or one that belongs to another user.
   */
  GetThread(argument: _agentloop_v1_GetThreadRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  GetThread(argument: _agentloop_v1_GetThreadRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  GetThread(argument: _agentloop_v1_GetThreadRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  GetThread(argument: _agentloop_v1_GetThreadRequest, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reads a thread: its conversation, a page at a time, and the state of its
   * latest run, or both as of one checkpoint. NOT_FOUND for an unknown thread
   * or one that belongs to another user.
   */
  getThread(argument: _agentloop_v1_GetThreadRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  getThread(argument: _agentloop_v1_GetThreadRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  getThread(argument: _agentloop_v1_GetThreadRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  getThread(argument: _agentloop_v1_GetThreadRequest, callback: grpc.requestCallback<_agentloop_v1_GetThreadResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Runs the loop to the end and returns only the outcome. Nothing streams
   * (stream_mode is ignored).
   */
  Invoke(argument: _agentloop_v1_InvokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _agentloop_v1_InvokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _agentloop_v1_InvokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  Invoke(argument: _agentloop_v1_InvokeRequest, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Runs the loop to the end and returns only the outcome. Nothing streams
   * (stream_mode is ignored).
   */
  invoke(argument: _agentloop_v1_InvokeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _agentloop_v1_InvokeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _agentloop_v1_InvokeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  invoke(argument: _agentloop_v1_InvokeRequest, callback: grpc.requestCallback<_agentloop_v1_InvokeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists a thread's checkpoints, oldest first, a page at a time. NOT_FOUND
   * for an unknown thread or one of another user.
   */
  ListCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  ListCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  ListCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  ListCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists a thread's checkpoints, oldest first, a page at a time. NOT_FOUND
   * for an unknown thread or one of another user.
   */
  listCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  listCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  listCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  listCheckpoints(argument: _agentloop_v1_ListCheckpointsRequest, callback: grpc.requestCallback<_agentloop_v1_ListCheckpointsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists the long-term memories stored for a user, newest first, a page at
   * a time.
   */
  ListMemories(argument: _agentloop_v1_ListMemoriesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  ListMemories(argument: _agentloop_v1_ListMemoriesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  ListMemories(argument: _agentloop_v1_ListMemoriesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  ListMemories(argument: _agentloop_v1_ListMemoriesRequest, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists the long-term memories stored for a user, newest first, a page at
   * a time.
   */
  listMemories(argument: _agentloop_v1_ListMemoriesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  listMemories(argument: _agentloop_v1_ListMemoriesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  listMemories(argument: _agentloop_v1_ListMemoriesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  listMemories(argument: _agentloop_v1_ListMemoriesRequest, callback: grpc.requestCallback<_agentloop_v1_ListMemoriesResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists a thread's runs, newest first, a page at a time. NOT_FOUND for an
   * unknown thread or one of another user.
   */
  ListRuns(argument: _agentloop_v1_ListRunsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  ListRuns(argument: _agentloop_v1_ListRunsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  ListRuns(argument: _agentloop_v1_ListRunsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  ListRuns(argument: _agentloop_v1_ListRunsRequest, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists a thread's runs, newest first, a page at a time. NOT_FOUND for an
   * unknown thread or one of another user.
   */
  listRuns(argument: _agentloop_v1_ListRunsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  listRuns(argument: _agentloop_v1_ListRunsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  listRuns(argument: _agentloop_v1_ListRunsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  listRuns(argument: _agentloop_v1_ListRunsRequest, callback: grpc.requestCallback<_agentloop_v1_ListRunsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists the caller's threads, most recently updated first, a page at a
   * time, each with a preview (its last message, its latest run's status).
   */
  ListThreads(argument: _agentloop_v1_ListThreadsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  ListThreads(argument: _agentloop_v1_ListThreadsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  ListThreads(argument: _agentloop_v1_ListThreadsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  ListThreads(argument: _agentloop_v1_ListThreadsRequest, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists the caller's threads, most recently updated first, a page at a
   * time, each with a preview (its last message, its latest run's status).
   */
  listThreads(argument: _agentloop_v1_ListThreadsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  listThreads(argument: _agentloop_v1_ListThreadsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  listThreads(argument: _agentloop_v1_ListThreadsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  listThreads(argument: _agentloop_v1_ListThreadsRequest, callback: grpc.requestCallback<_agentloop_v1_ListThreadsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Continues an interrupted run (its gateway died) from its last
   * checkpoint and streams its events from there. Tool calls that already
   * finished are not run again. NOT_FOUND for an unknown run or one of
   * another user; FAILED_PRECONDITION when the run has ended or another live
   * gateway owns it.
   */
  Resume(argument: _agentloop_v1_ResumeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ResumeResponse__Output>;
  Resume(argument: _agentloop_v1_ResumeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ResumeResponse__Output>;
  /**
   * Continues an interrupted run (its gateway died) from its last
   * checkpoint and streams its events from there. Tool calls that already
   * finished are not run again. NOT_FOUND for an unknown run or one of
   * another user; FAILED_PRECONDITION when the run has ended or another live
   * gateway owns it.
   */
  resume(argument: _agentloop_v1_ResumeRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ResumeResponse__Output>;
  resume(argument: _agentloop_v1_ResumeRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ResumeResponse__Output>;
  
  /**
   * Starts a run on a thread and streams its events: node_start/node_end
   * around each node, llm_token while the model writes, tool_start/tool_end
   * per tool call, then exactly one final event (or one error event).
   * Errors before the run starts: INVALID_ARGUMENT naming the bad field;
   * NOT_FOUND for a thread of another user; ABORTED when the thread already
   * has an active run and the policy is REJECT. A client that goes away does
   * not stop the run unless options.cancel_on_disconnect is set; reattach
   * with Watch.
   */
  Run(argument: _agentloop_v1_RunRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_RunResponse__Output>;
  Run(argument: _agentloop_v1_RunRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_RunResponse__Output>;
  /**
   * Starts a run on a thread and streams its events: node_start/node_end
   * around each node, llm_token while the model writes, tool_start/tool_end
   * per tool call, then exactly one final event (or one error event).
   * Errors before the run starts: INVALID_ARGUMENT naming the bad field;
   * NOT_FOUND for a thread of another user; ABORTED when the thread already
   * has an active run and the policy is REJECT. A client that goes away does
   * not stop the run unless options.cancel_on_disconnect is set; reattach
   * with Watch.
   */
  run(argument: _agentloop_v1_RunRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_RunResponse__Output>;
  run(argument: _agentloop_v1_RunRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_RunResponse__Output>;
  
  /**
   * Streams a run's events with sequence > after_sequence: the stored ones
   * first, then live ones until the run ends. Works during and after the run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  Watch(argument: _agentloop_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_WatchResponse__Output>;
  Watch(argument: _agentloop_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_WatchResponse__Output>;
  /**
   * Streams a run's events with sequence > after_sequence: the stored ones
   * first, then live ones until the run ends. Works during and after the run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  watch(argument: _agentloop_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_WatchResponse__Output>;
  watch(argument: _agentloop_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_WatchResponse__Output>;
  
}

/**
 * The agent loop as a service. Runs are durable: every node transition is
 * checkpointed before the next node starts, so a run survives the gateway
 * that started it and can be resumed, watched or cancelled from any gateway
 * sharing the same database.
 */
export interface AgentHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Asks a run to stop at its next safe point. Tool calls already issued get
   * a "cancelled" result so the thread stays valid for its next run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  Cancel: grpc.handleUnaryCall<_agentloop_v1_CancelRequest__Output, _agentloop_v1_CancelResponse>;
  
  /**
   * Deletes one memory of a user. NOT_FOUND when it does not exist.
   */
  DeleteMemory: grpc.handleUnaryCall<_agentloop_v1_DeleteMemoryRequest__Output, _agentloop_v1_DeleteMemoryResponse>;
  
  /**
   * Copies a thread as of one of its checkpoints into a new thread of the
   * same user (time travel: retry from an earlier point). The new thread has
   * the conversation up to that checkpoint and no runs; runs on it never
   * change the original, nor runs on the original the copy. Tool calls that
   * had no result at that checkpoint are closed in the copy with an error
   * result ("Not run: the thread was forked before this tool call
   * finished."), so the copy is a conversation every model accepts. NOT_FOUND for an
   * unknown thread or checkpoint (or another user's); ALREADY_EXISTS when
   * new_thread_id is taken.
   */
  ForkThread: grpc.handleUnaryCall<_agentloop_v1_ForkThreadRequest__Output, _agentloop_v1_ForkThreadResponse>;
  
  /**
   * Reads a thread: its conversation, a page at a time, and the state of its
   * latest run, or both as of one checkpoint. NOT_FOUND for an unknown thread
   * or one that belongs to another user.
   */
  GetThread: grpc.handleUnaryCall<_agentloop_v1_GetThreadRequest__Output, _agentloop_v1_GetThreadResponse>;
  
  /**
   * Runs the loop to the end and returns only the outcome. Nothing streams
   * (stream_mode is ignored).
   */
  Invoke: grpc.handleUnaryCall<_agentloop_v1_InvokeRequest__Output, _agentloop_v1_InvokeResponse>;
  
  /**
   * Lists a thread's checkpoints, oldest first, a page at a time. NOT_FOUND
   * for an unknown thread or one of another user.
   */
  ListCheckpoints: grpc.handleUnaryCall<_agentloop_v1_ListCheckpointsRequest__Output, _agentloop_v1_ListCheckpointsResponse>;
  
  /**
   * Lists the long-term memories stored for a user, newest first, a page at
   * a time.
   */
  ListMemories: grpc.handleUnaryCall<_agentloop_v1_ListMemoriesRequest__Output, _agentloop_v1_ListMemoriesResponse>;
  
  /**
   * Lists a thread's runs, newest first, a page at a time. NOT_FOUND for an
   * unknown thread or one of another user.
   */
  ListRuns: grpc.handleUnaryCall<_agentloop_v1_ListRunsRequest__Output, _agentloop_v1_ListRunsResponse>;
  
  /**
   * Lists the caller's threads, most recently updated first, a page at a
   * time, each with a preview (its last message, its latest run's status).
   */
  ListThreads: grpc.handleUnaryCall<_agentloop_v1_ListThreadsRequest__Output, _agentloop_v1_ListThreadsResponse>;
  
  /**
   * Continues an interrupted run (its gateway died) from its last
   * checkpoint and streams its events from there. Tool calls that already
   * finished are not run again. NOT_FOUND for an unknown run or one of
   * another user; FAILED_PRECONDITION when the run has ended or another live
   * gateway owns it.
   */
  Resume: grpc.handleServerStreamingCall<_agentloop_v1_ResumeRequest__Output, _agentloop_v1_ResumeResponse>;
  
  /**
   * Starts a run on a thread and streams its events: node_start/node_end
   * around each node, llm_token while the model writes, tool_start/tool_end
   * per tool call, then exactly one final event (or one error event).
   * Errors before the run starts: INVALID_ARGUMENT naming the bad field;
   * NOT_FOUND for a thread of another user; ABORTED when the thread already
   * has an active run and the policy is REJECT. A client that goes away does
   * not stop the run unless options.cancel_on_disconnect is set; reattach
   * with Watch.
   */
  Run: grpc.handleServerStreamingCall<_agentloop_v1_RunRequest__Output, _agentloop_v1_RunResponse>;
  
  /**
   * Streams a run's events with sequence > after_sequence: the stored ones
   * first, then live ones until the run ends. Works during and after the run.
   * NOT_FOUND for an unknown run or one of another user.
   */
  Watch: grpc.handleServerStreamingCall<_agentloop_v1_WatchRequest__Output, _agentloop_v1_WatchResponse>;
  
}

export interface AgentDefinition extends grpc.ServiceDefinition {
  Cancel: MethodDefinition<_agentloop_v1_CancelRequest, _agentloop_v1_CancelResponse, _agentloop_v1_CancelRequest__Output, _agentloop_v1_CancelResponse__Output>
  DeleteMemory: MethodDefinition<_agentloop_v1_DeleteMemoryRequest, _agentloop_v1_DeleteMemoryResponse, _agentloop_v1_DeleteMemoryRequest__Output, _agentloop_v1_DeleteMemoryResponse__Output>
  ForkThread: MethodDefinition<_agentloop_v1_ForkThreadRequest, _agentloop_v1_ForkThreadResponse, _agentloop_v1_ForkThreadRequest__Output, _agentloop_v1_ForkThreadResponse__Output>
  GetThread: MethodDefinition<_agentloop_v1_GetThreadRequest, _agentloop_v1_GetThreadResponse, _agentloop_v1_GetThreadRequest__Output, _agentloop_v1_GetThreadResponse__Output>
  Invoke: MethodDefinition<_agentloop_v1_InvokeRequest, _agentloop_v1_InvokeResponse, _agentloop_v1_InvokeRequest__Output, _agentloop_v1_InvokeResponse__Output>
  ListCheckpoints: MethodDefinition<_agentloop_v1_ListCheckpointsRequest, _agentloop_v1_ListCheckpointsResponse, _agentloop_v1_ListCheckpointsRequest__Output, _agentloop_v1_ListCheckpointsResponse__Output>
  ListMemories: MethodDefinition<_agentloop_v1_ListMemoriesRequest, _agentloop_v1_ListMemoriesResponse, _agentloop_v1_ListMemoriesRequest__Output, _agentloop_v1_ListMemoriesResponse__Output>
  ListRuns: MethodDefinition<_agentloop_v1_ListRunsRequest, _agentloop_v1_ListRunsResponse, _agentloop_v1_ListRunsRequest__Output, _agentloop_v1_ListRunsResponse__Output>
  ListThreads: MethodDefinition<_agentloop_v1_ListThreadsRequest, _agentloop_v1_ListThreadsResponse, _agentloop_v1_ListThreadsRequest__Output, _agentloop_v1_ListThreadsResponse__Output>
  Resume: MethodDefinition<_agentloop_v1_ResumeRequest, _agentloop_v1_ResumeResponse, _agentloop_v1_ResumeRequest__Output, _agentloop_v1_ResumeResponse__Output>
  Run: MethodDefinition<_agentloop_v1_RunRequest, _agentloop_v1_RunResponse, _agentloop_v1_RunRequest__Output, _agentloop_v1_RunResponse__Output>
  Watch: MethodDefinition<_agentloop_v1_WatchRequest, _agentloop_v1_WatchResponse, _agentloop_v1_WatchRequest__Output, _agentloop_v1_WatchResponse__Output>
}
