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
import type { DescriptorProto as _google_protobuf_DescriptorProto, DescriptorProto__Output as _google_protobuf_DescriptorProto__Output } from './google/protobuf/DescriptorProto';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from './google/protobuf/Duration';
import type { EnumDescriptorProto as _google_protobuf_EnumDescriptorProto, EnumDescriptorProto__Output as _google_protobuf_EnumDescriptorProto__Output } from './google/protobuf/EnumDescriptorProto';
import type { EnumOptions as _google_protobuf_EnumOptions, EnumOptions__Output as _google_protobuf_EnumOptions__Output } from './google/protobuf/EnumOptions';
import type { EnumValueDescriptorProto as _google_protobuf_EnumValueDescriptorProto, EnumValueDescriptorProto__Output as _google_protobuf_EnumValueDescriptorProto__Output } from './google/protobuf/EnumValueDescriptorProto';
import type { EnumValueOptions as _google_protobuf_EnumValueOptions, EnumValueOptions__Output as _google_protobuf_EnumValueOptions__Output } from './google/protobuf/EnumValueOptions';
import type { ExtensionRangeOptions as _google_protobuf_ExtensionRangeOptions, ExtensionRangeOptions__Output as _google_protobuf_ExtensionRangeOptions__Output } from './google/protobuf/ExtensionRangeOptions';
import type { FeatureSet as _google_protobuf_FeatureSet, FeatureSet__Output as _google_protobuf_FeatureSet__Output } from './google/protobuf/FeatureSet';
import type { FeatureSetDefaults as _google_protobuf_FeatureSetDefaults, FeatureSetDefaults__Output as _google_protobuf_FeatureSetDefaults__Output } from './google/protobuf/FeatureSetDefaults';
import type { FieldDescriptorProto as _google_protobuf_FieldDescriptorProto, FieldDescriptorProto__Output as _google_protobuf_FieldDescriptorProto__Output } from './google/protobuf/FieldDescriptorProto';
import type { FieldOptions as _google_protobuf_FieldOptions, FieldOptions__Output as _google_protobuf_FieldOptions__Output } from './google/protobuf/FieldOptions';
import type { FileDescriptorProto as _google_protobuf_FileDescriptorProto, FileDescriptorProto__Output as _google_protobuf_FileDescriptorProto__Output } from './google/protobuf/FileDescriptorProto';
import type { FileDescriptorSet as _google_protobuf_FileDescriptorSet, FileDescriptorSet__Output as _google_protobuf_FileDescriptorSet__Output } from './google/protobuf/FileDescriptorSet';
import type { FileOptions as _google_protobuf_FileOptions, FileOptions__Output as _google_protobuf_FileOptions__Output } from './google/protobuf/FileOptions';
import type { GeneratedCodeInfo as _google_protobuf_GeneratedCodeInfo, GeneratedCodeInfo__Output as _google_protobuf_GeneratedCodeInfo__Output } from './google/protobuf/GeneratedCodeInfo';
import type { MessageOptions as _google_protobuf_MessageOptions, MessageOptions__Output as _google_protobuf_MessageOptions__Output } from './google/protobuf/MessageOptions';
import type { MethodDescriptorProto as _google_protobuf_MethodDescriptorProto, MethodDescriptorProto__Output as _google_protobuf_MethodDescriptorProto__Output } from './google/protobuf/MethodDescriptorProto';
import type { MethodOptions as _google_protobuf_MethodOptions, MethodOptions__Output as _google_protobuf_MethodOptions__Output } from './google/protobuf/MethodOptions';
import type { OneofDescriptorProto as _google_protobuf_OneofDescriptorProto, OneofDescriptorProto__Output as _google_protobuf_OneofDescriptorProto__Output } from './google/protobuf/OneofDescriptorProto';
import type { OneofOptions as _google_protobuf_OneofOptions, OneofOptions__Output as _google_protobuf_OneofOptions__Output } from './google/protobuf/OneofOptions';
import type { ServiceDescriptorProto as _google_protobuf_ServiceDescriptorProto, ServiceDescriptorProto__Output as _google_protobuf_ServiceDescriptorProto__Output } from './google/protobuf/ServiceDescriptorProto';
import type { ServiceOptions as _google_protobuf_ServiceOptions, ServiceOptions__Output as _google_protobuf_ServiceOptions__Output } from './google/protobuf/ServiceOptions';
import type { SourceCodeInfo as _google_protobuf_SourceCodeInfo, SourceCodeInfo__Output as _google_protobuf_SourceCodeInfo__Output } from './google/protobuf/SourceCodeInfo';
import type { UninterpretedOption as _google_protobuf_UninterpretedOption, UninterpretedOption__Output as _google_protobuf_UninterpretedOption__Output } from './google/protobuf/UninterpretedOption';

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
    api: {
      FieldBehavior: EnumTypeDefinition
    }
    protobuf: {
      DescriptorProto: MessageTypeDefinition<_google_protobuf_DescriptorProto, _google_protobuf_DescriptorProto__Output>
      Duration: MessageTypeDefinition<_google_protobuf_Duration, _google_protobuf_Duration__Output>
      Edition: EnumTypeDefinition
      EnumDescriptorProto: MessageTypeDefinition<_google_protobuf_EnumDescriptorProto, _google_protobuf_EnumDescriptorProto__Output>
      EnumOptions: MessageTypeDefinition<_google_protobuf_EnumOptions, _google_protobuf_EnumOptions__Output>
      EnumValueDescriptorProto: MessageTypeDefinition<_google_protobuf_EnumValueDescriptorProto, _google_protobuf_EnumValueDescriptorProto__Output>
      EnumValueOptions: MessageTypeDefinition<_google_protobuf_EnumValueOptions, _google_protobuf_EnumValueOptions__Output>
      ExtensionRangeOptions: MessageTypeDefinition<_google_protobuf_ExtensionRangeOptions, _google_protobuf_ExtensionRangeOptions__Output>
      FeatureSet: MessageTypeDefinition<_google_protobuf_FeatureSet, _google_protobuf_FeatureSet__Output>
      FeatureSetDefaults: MessageTypeDefinition<_google_protobuf_FeatureSetDefaults, _google_protobuf_FeatureSetDefaults__Output>
      FieldDescriptorProto: MessageTypeDefinition<_google_protobuf_FieldDescriptorProto, _google_protobuf_FieldDescriptorProto__Output>
      FieldOptions: MessageTypeDefinition<_google_protobuf_FieldOptions, _google_protobuf_FieldOptions__Output>
      FileDescriptorProto: MessageTypeDefinition<_google_protobuf_FileDescriptorProto, _google_protobuf_FileDescriptorProto__Output>
      FileDescriptorSet: MessageTypeDefinition<_google_protobuf_FileDescriptorSet, _google_protobuf_FileDescriptorSet__Output>
      FileOptions: MessageTypeDefinition<_google_protobuf_FileOptions, _google_protobuf_FileOptions__Output>
      GeneratedCodeInfo: MessageTypeDefinition<_google_protobuf_GeneratedCodeInfo, _google_protobuf_GeneratedCodeInfo__Output>
      MessageOptions: MessageTypeDefinition<_google_protobuf_MessageOptions, _google_protobuf_MessageOptions__Output>
      MethodDescriptorProto: MessageTypeDefinition<_google_protobuf_MethodDescriptorProto, _google_protobuf_MethodDescriptorProto__Output>
      MethodOptions: MessageTypeDefinition<_google_protobuf_MethodOptions, _google_protobuf_MethodOptions__Output>
      OneofDescriptorProto: MessageTypeDefinition<_google_protobuf_OneofDescriptorProto, _google_protobuf_OneofDescriptorProto__Output>
      OneofOptions: MessageTypeDefinition<_google_protobuf_OneofOptions, _google_protobuf_OneofOptions__Output>
      ServiceDescriptorProto: MessageTypeDefinition<_google_protobuf_ServiceDescriptorProto, _google_protobuf_ServiceDescriptorProto__Output>
      ServiceOptions: MessageTypeDefinition<_google_protobuf_ServiceOptions, _google_protobuf_ServiceOptions__Output>
      SourceCodeInfo: MessageTypeDefinition<_google_protobuf_SourceCodeInfo, _google_protobuf_SourceCodeInfo__Output>
      SymbolVisibility: EnumTypeDefinition
      UninterpretedOption: MessageTypeDefinition<_google_protobuf_UninterpretedOption, _google_protobuf_UninterpretedOption__Output>
    }
  }
}

