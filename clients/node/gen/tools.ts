import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ExecuteRequest as _agentloop_v1_ExecuteRequest, ExecuteRequest__Output as _agentloop_v1_ExecuteRequest__Output } from './agentloop/v1/ExecuteRequest';
import type { ExecuteResponse as _agentloop_v1_ExecuteResponse, ExecuteResponse__Output as _agentloop_v1_ExecuteResponse__Output } from './agentloop/v1/ExecuteResponse';
import type { InjectedContext as _agentloop_v1_InjectedContext, InjectedContext__Output as _agentloop_v1_InjectedContext__Output } from './agentloop/v1/InjectedContext';
import type { ListToolsRequest as _agentloop_v1_ListToolsRequest, ListToolsRequest__Output as _agentloop_v1_ListToolsRequest__Output } from './agentloop/v1/ListToolsRequest';
import type { ListToolsResponse as _agentloop_v1_ListToolsResponse, ListToolsResponse__Output as _agentloop_v1_ListToolsResponse__Output } from './agentloop/v1/ListToolsResponse';
import type { LoopPolicy as _agentloop_v1_LoopPolicy, LoopPolicy__Output as _agentloop_v1_LoopPolicy__Output } from './agentloop/v1/LoopPolicy';
import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from './agentloop/v1/Message';
import type { NextStepRule as _agentloop_v1_NextStepRule, NextStepRule__Output as _agentloop_v1_NextStepRule__Output } from './agentloop/v1/NextStepRule';
import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from './agentloop/v1/ToolCall';
import type { ToolChoice as _agentloop_v1_ToolChoice, ToolChoice__Output as _agentloop_v1_ToolChoice__Output } from './agentloop/v1/ToolChoice';
import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from './agentloop/v1/ToolResult';
import type { ToolServiceClient as _agentloop_v1_ToolServiceClient, ToolServiceDefinition as _agentloop_v1_ToolServiceDefinition } from './agentloop/v1/ToolService';
import type { ToolSpec as _agentloop_v1_ToolSpec, ToolSpec__Output as _agentloop_v1_ToolSpec__Output } from './agentloop/v1/ToolSpec';
import type { ToolStarted as _agentloop_v1_ToolStarted, ToolStarted__Output as _agentloop_v1_ToolStarted__Output } from './agentloop/v1/ToolStarted';
import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from './agentloop/v1/Usage';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from './google/protobuf/Duration';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  agentloop: {
    v1: {
      ExecuteRequest: MessageTypeDefinition<_agentloop_v1_ExecuteRequest, _agentloop_v1_ExecuteRequest__Output>
      ExecuteResponse: MessageTypeDefinition<_agentloop_v1_ExecuteResponse, _agentloop_v1_ExecuteResponse__Output>
      InjectedContext: MessageTypeDefinition<_agentloop_v1_InjectedContext, _agentloop_v1_InjectedContext__Output>
      ListToolsRequest: MessageTypeDefinition<_agentloop_v1_ListToolsRequest, _agentloop_v1_ListToolsRequest__Output>
      ListToolsResponse: MessageTypeDefinition<_agentloop_v1_ListToolsResponse, _agentloop_v1_ListToolsResponse__Output>
      LoopPolicy: MessageTypeDefinition<_agentloop_v1_LoopPolicy, _agentloop_v1_LoopPolicy__Output>
      Message: MessageTypeDefinition<_agentloop_v1_Message, _agentloop_v1_Message__Output>
      NextStepRule: MessageTypeDefinition<_agentloop_v1_NextStepRule, _agentloop_v1_NextStepRule__Output>
      NextStepTrigger: EnumTypeDefinition
      Role: EnumTypeDefinition
      ToolCall: MessageTypeDefinition<_agentloop_v1_ToolCall, _agentloop_v1_ToolCall__Output>
      ToolChoice: MessageTypeDefinition<_agentloop_v1_ToolChoice, _agentloop_v1_ToolChoice__Output>
      ToolChoiceMode: EnumTypeDefinition
      ToolErrorKind: EnumTypeDefinition
      ToolResult: MessageTypeDefinition<_agentloop_v1_ToolResult, _agentloop_v1_ToolResult__Output>
      /**
       * Tool registry and executor.
       */
      ToolService: SubtypeConstructor<typeof grpc.Client, _agentloop_v1_ToolServiceClient> & { service: _agentloop_v1_ToolServiceDefinition }
      ToolSpec: MessageTypeDefinition<_agentloop_v1_ToolSpec, _agentloop_v1_ToolSpec__Output>
      ToolStarted: MessageTypeDefinition<_agentloop_v1_ToolStarted, _agentloop_v1_ToolStarted__Output>
      Usage: MessageTypeDefinition<_agentloop_v1_Usage, _agentloop_v1_Usage__Output>
    }
  }
  google: {
    protobuf: {
      Duration: MessageTypeDefinition<_google_protobuf_Duration, _google_protobuf_Duration__Output>
    }
  }
}

