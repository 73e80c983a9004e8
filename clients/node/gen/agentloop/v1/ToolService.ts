// Original file: protos/agentloop/v1/tools.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ExecuteRequest as _agentloop_v1_ExecuteRequest, ExecuteRequest__Output as _agentloop_v1_ExecuteRequest__Output } from '../../agentloop/v1/ExecuteRequest';
import type { ExecuteResponse as _agentloop_v1_ExecuteResponse, ExecuteResponse__Output as _agentloop_v1_ExecuteResponse__Output } from '../../agentloop/v1/ExecuteResponse';
import type { ListToolsRequest as _agentloop_v1_ListToolsRequest, ListToolsRequest__Output as _agentloop_v1_ListToolsRequest__Output } from '../../agentloop/v1/ListToolsRequest';
import type { ListToolsResponse as _agentloop_v1_ListToolsResponse, ListToolsResponse__Output as _agentloop_v1_ListToolsResponse__Output } from '../../agentloop/v1/ListToolsResponse';

/**
 * Tool registry and executor.
 */
export interface ToolServiceClient extends grpc.Client {
  /**
   * Runs a batch of calls concurrently (bounded), each under its own timeout.
   * Streams a `started` event when a call starts and a `finished` event with
   * its result as each one ends, in completion order; every call in the
   * request gets exactly one `finished` event. INVALID_ARGUMENT only for a
   * malformed batch (no calls, a call without id or name, duplicate ids).
   */
  Execute(argument: _agentloop_v1_ExecuteRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ExecuteResponse__Output>;
  Execute(argument: _agentloop_v1_ExecuteRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ExecuteResponse__Output>;
  /**
   * Runs a batch of calls concurrently (bounded), each under its own timeout.
   * Streams a `started` event when a call starts and a `finished` event with
   * its result as each one ends, in completion order; every call in the
   * request gets exactly one `finished` event. INVALID_ARGUMENT only for a
   * malformed batch (no calls, a call without id or name, duplicate ids).
   */
  execute(argument: _agentloop_v1_ExecuteRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ExecuteResponse__Output>;
  execute(argument: _agentloop_v1_ExecuteRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_ExecuteResponse__Output>;
  
  /**
   * Lists the registered tools with the JSON schema the model sees.
   */
  ListTools(argument: _agentloop_v1_ListToolsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  ListTools(argument: _agentloop_v1_ListToolsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  ListTools(argument: _agentloop_v1_ListToolsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  ListTools(argument: _agentloop_v1_ListToolsRequest, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists the registered tools with the JSON schema the model sees.
   */
  listTools(argument: _agentloop_v1_ListToolsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  listTools(argument: _agentloop_v1_ListToolsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  listTools(argument: _agentloop_v1_ListToolsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  listTools(argument: _agentloop_v1_ListToolsRequest, callback: grpc.requestCallback<_agentloop_v1_ListToolsResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * Tool registry and executor.
 */
export interface ToolServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Runs a batch of calls concurrently (bounded), each under its own timeout.
   * Streams a `started` event when a call starts and a `finished` event with
   * its result as each one ends, in completion order; every call in the
   * request gets exactly one `finished` event. INVALID_ARGUMENT only for a
   * malformed batch (no calls, a call without id or name, duplicate ids).
   */
  Execute: grpc.handleServerStreamingCall<_agentloop_v1_ExecuteRequest__Output, _agentloop_v1_ExecuteResponse>;
  
  /**
   * Lists the registered tools with the JSON schema the model sees.
   */
  ListTools: grpc.handleUnaryCall<_agentloop_v1_ListToolsRequest__Output, _agentloop_v1_ListToolsResponse>;
  
}

export interface ToolServiceDefinition extends grpc.ServiceDefinition {
  Execute: MethodDefinition<_agentloop_v1_ExecuteRequest, _agentloop_v1_ExecuteResponse, _agentloop_v1_ExecuteRequest__Output, _agentloop_v1_ExecuteResponse__Output>
  ListTools: MethodDefinition<_agentloop_v1_ListToolsRequest, _agentloop_v1_ListToolsResponse, _agentloop_v1_ListToolsRequest__Output, _agentloop_v1_ListToolsResponse__Output>
}
