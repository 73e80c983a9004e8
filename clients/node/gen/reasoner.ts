import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { CompletionParams as _agentloop_v1_CompletionParams, CompletionParams__Output as _agentloop_v1_CompletionParams__Output } from './agentloop/v1/CompletionParams';
import type { InjectedContext as _agentloop_v1_InjectedContext, InjectedContext__Output as _agentloop_v1_InjectedContext__Output } from './agentloop/v1/InjectedContext';
import type { ListModelsRequest as _agentloop_v1_ListModelsRequest, ListModelsRequest__Output as _agentloop_v1_ListModelsRequest__Output } from './agentloop/v1/ListModelsRequest';
import type { ListModelsResponse as _agentloop_v1_ListModelsResponse, ListModelsResponse__Output as _agentloop_v1_ListModelsResponse__Output } from './agentloop/v1/ListModelsResponse';
import type { LoopPolicy as _agentloop_v1_LoopPolicy, LoopPolicy__Output as _agentloop_v1_LoopPolicy__Output } from './agentloop/v1/LoopPolicy';
import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from './agentloop/v1/Message';
import type { ModelFallback as _agentloop_v1_ModelFallback, ModelFallback__Output as _agentloop_v1_ModelFallback__Output } from './agentloop/v1/ModelFallback';
import type { ModelInfo as _agentloop_v1_ModelInfo, ModelInfo__Output as _agentloop_v1_ModelInfo__Output } from './agentloop/v1/ModelInfo';
import type { NextStepRule as _agentloop_v1_NextStepRule, NextStepRule__Output as _agentloop_v1_NextStepRule__Output } from './agentloop/v1/NextStepRule';
import type { ReasonerClient as _agentloop_v1_ReasonerClient, ReasonerDefinition as _agentloop_v1_ReasonerDefinition } from './agentloop/v1/Reasoner';
import type { StepRequest as _agentloop_v1_StepRequest, StepRequest__Output as _agentloop_v1_StepRequest__Output } from './agentloop/v1/StepRequest';
import type { StepResponse as _agentloop_v1_StepResponse, StepResponse__Output as _agentloop_v1_StepResponse__Output } from './agentloop/v1/StepResponse';
import type { StepResult as _agentloop_v1_StepResult, StepResult__Output as _agentloop_v1_StepResult__Output } from './agentloop/v1/StepResult';
import type { StreamStepRequest as _agentloop_v1_StreamStepRequest, StreamStepRequest__Output as _agentloop_v1_StreamStepRequest__Output } from './agentloop/v1/StreamStepRequest';
import type { StreamStepResponse as _agentloop_v1_StreamStepResponse, StreamStepResponse__Output as _agentloop_v1_StreamStepResponse__Output } from './agentloop/v1/StreamStepResponse';
import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from './agentloop/v1/ToolCall';
import type { ToolChoice as _agentloop_v1_ToolChoice, ToolChoice__Output as _agentloop_v1_ToolChoice__Output } from './agentloop/v1/ToolChoice';
import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from './agentloop/v1/ToolResult';
import type { ToolSpec as _agentloop_v1_ToolSpec, ToolSpec__Output as _agentloop_v1_ToolSpec__Output } from './agentloop/v1/ToolSpec';
import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from './agentloop/v1/Usage';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from './google/protobuf/Duration';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  agentloop: {
    v1: {
      CompletionParams: MessageTypeDefinition<_agentloop_v1_CompletionParams, _agentloop_v1_CompletionParams__Output>
      InjectedContext: MessageTypeDefinition<_agentloop_v1_InjectedContext, _agentloop_v1_InjectedContext__Output>
      ListModelsRequest: MessageTypeDefinition<_agentloop_v1_ListModelsRequest, _agentloop_v1_ListModelsRequest__Output>
      ListModelsResponse: MessageTypeDefinition<_agentloop_v1_ListModelsResponse, _agentloop_v1_ListModelsResponse__Output>
      LoopPolicy: MessageTypeDefinition<_agentloop_v1_LoopPolicy, _agentloop_v1_LoopPolicy__Output>
      Message: MessageTypeDefinition<_agentloop_v1_Message, _agentloop_v1_Message__Output>
      ModelFallback: MessageTypeDefinition<_agentloop_v1_ModelFallback, _agentloop_v1_ModelFallback__Output>
      ModelInfo: MessageTypeDefinition<_agentloop_v1_ModelInfo, _agentloop_v1_ModelInfo__Output>
      NextStepRule: MessageTypeDefinition<_agentloop_v1_NextStepRule, _agentloop_v1_NextStepRule__Output>
      NextStepTrigger: EnumTypeDefinition
      /**
       * One LLM step, unary or streamed.
       */
      Reasoner: SubtypeConstructor<typeof grpc.Client, _agentloop_v1_ReasonerClient> & { service: _agentloop_v1_ReasonerDefinition }
      Role: EnumTypeDefinition
      StepRequest: MessageTypeDefinition<_agentloop_v1_StepRequest, _agentloop_v1_StepRequest__Output>
      StepResponse: MessageTypeDefinition<_agentloop_v1_StepResponse, _agentloop_v1_StepResponse__Output>
      StepResult: MessageTypeDefinition<_agentloop_v1_StepResult, _agentloop_v1_StepResult__Output>
      StreamStepRequest: MessageTypeDefinition<_agentloop_v1_StreamStepRequest, _agentloop_v1_StreamStepRequest__Output>
      StreamStepResponse: MessageTypeDefinition<_agentloop_v1_StreamStepResponse, _agentloop_v1_StreamStepResponse__Output>
      ToolCall: MessageTypeDefinition<_agentloop_v1_ToolCall, _agentloop_v1_ToolCall__Output>
      ToolChoice: MessageTypeDefinition<_agentloop_v1_ToolChoice, _agentloop_v1_ToolChoice__Output>
      ToolChoiceMode: EnumTypeDefinition
      ToolErrorKind: EnumTypeDefinition
      ToolResult: MessageTypeDefinition<_agentloop_v1_ToolResult, _agentloop_v1_ToolResult__Output>
      ToolSpec: MessageTypeDefinition<_agentloop_v1_ToolSpec, _agentloop_v1_ToolSpec__Output>
      Usage: MessageTypeDefinition<_agentloop_v1_Usage, _agentloop_v1_Usage__Output>
    }
  }
  google: {
    protobuf: {
      Duration: MessageTypeDefinition<_google_protobuf_Duration, _google_protobuf_Duration__Output>
    }
  }
}

