import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AgentClient as _agentloop_v1_AgentClient, AgentDefinition as _agentloop_v1_AgentDefinition } from './agentloop/v1/Agent';
import type { ApprovalDecision as _agentloop_v1_ApprovalDecision, ApprovalDecision__Output as _agentloop_v1_ApprovalDecision__Output } from './agentloop/v1/ApprovalDecision';
import type { CancelRequest as _agentloop_v1_CancelRequest, CancelRequest__Output as _agentloop_v1_CancelRequest__Output } from './agentloop/v1/CancelRequest';
import type { CancelResponse as _agentloop_v1_CancelResponse, CancelResponse__Output as _agentloop_v1_CancelResponse__Output } from './agentloop/v1/CancelResponse';
import type { Checkpoint as _agentloop_v1_Checkpoint, Checkpoint__Output as _agentloop_v1_Checkpoint__Output } from './agentloop/v1/Checkpoint';
import type { Decision as _agentloop_v1_Decision, Decision__Output as _agentloop_v1_Decision__Output } from './agentloop/v1/Decision';
import type { DeleteMemoryRequest as _agentloop_v1_DeleteMemoryRequest, DeleteMemoryRequest__Output as _agentloop_v1_DeleteMemoryRequest__Output } from './agentloop/v1/DeleteMemoryRequest';
import type { DeleteMemoryResponse as _agentloop_v1_DeleteMemoryResponse, DeleteMemoryResponse__Output as _agentloop_v1_DeleteMemoryResponse__Output } from './agentloop/v1/DeleteMemoryResponse';
import type { ForkThreadRequest as _agentloop_v1_ForkThreadRequest, ForkThreadRequest__Output as _agentloop_v1_ForkThreadRequest__Output } from './agentloop/v1/ForkThreadRequest';
import type { ForkThreadResponse as _agentloop_v1_ForkThreadResponse, ForkThreadResponse__Output as _agentloop_v1_ForkThreadResponse__Output } from './agentloop/v1/ForkThreadResponse';
import type { GetThreadRequest as _agentloop_v1_GetThreadRequest, GetThreadRequest__Output as _agentloop_v1_GetThreadRequest__Output } from './agentloop/v1/GetThreadRequest';
import type { GetThreadResponse as _agentloop_v1_GetThreadResponse, GetThreadResponse__Output as _agentloop_v1_GetThreadResponse__Output } from './agentloop/v1/GetThreadResponse';
import type { InjectedContext as _agentloop_v1_InjectedContext, InjectedContext__Output as _agentloop_v1_InjectedContext__Output } from './agentloop/v1/InjectedContext';
import type { Interrupt as _agentloop_v1_Interrupt, Interrupt__Output as _agentloop_v1_Interrupt__Output } from './agentloop/v1/Interrupt';
import type { InvokeRequest as _agentloop_v1_InvokeRequest, InvokeRequest__Output as _agentloop_v1_InvokeRequest__Output } from './agentloop/v1/InvokeRequest';
import type { InvokeResponse as _agentloop_v1_InvokeResponse, InvokeResponse__Output as _agentloop_v1_InvokeResponse__Output } from './agentloop/v1/InvokeResponse';
import type { ListCheckpointsRequest as _agentloop_v1_ListCheckpointsRequest, ListCheckpointsRequest__Output as _agentloop_v1_ListCheckpointsRequest__Output } from './agentloop/v1/ListCheckpointsRequest';
import type { ListCheckpointsResponse as _agentloop_v1_ListCheckpointsResponse, ListCheckpointsResponse__Output as _agentloop_v1_ListCheckpointsResponse__Output } from './agentloop/v1/ListCheckpointsResponse';
import type { ListMemoriesRequest as _agentloop_v1_ListMemoriesRequest, ListMemoriesRequest__Output as _agentloop_v1_ListMemoriesRequest__Output } from './agentloop/v1/ListMemoriesRequest';
import type { ListMemoriesResponse as _agentloop_v1_ListMemoriesResponse, ListMemoriesResponse__Output as _agentloop_v1_ListMemoriesResponse__Output } from './agentloop/v1/ListMemoriesResponse';
import type { ListRunsRequest as _agentloop_v1_ListRunsRequest, ListRunsRequest__Output as _agentloop_v1_ListRunsRequest__Output } from './agentloop/v1/ListRunsRequest';
import type { ListRunsResponse as _agentloop_v1_ListRunsResponse, ListRunsResponse__Output as _agentloop_v1_ListRunsResponse__Output } from './agentloop/v1/ListRunsResponse';
import type { ListThreadsRequest as _agentloop_v1_ListThreadsRequest, ListThreadsRequest__Output as _agentloop_v1_ListThreadsRequest__Output } from './agentloop/v1/ListThreadsRequest';
import type { ListThreadsResponse as _agentloop_v1_ListThreadsResponse, ListThreadsResponse__Output as _agentloop_v1_ListThreadsResponse__Output } from './agentloop/v1/ListThreadsResponse';
import type { LlmToken as _agentloop_v1_LlmToken, LlmToken__Output as _agentloop_v1_LlmToken__Output } from './agentloop/v1/LlmToken';
import type { LoopDetection as _agentloop_v1_LoopDetection, LoopDetection__Output as _agentloop_v1_LoopDetection__Output } from './agentloop/v1/LoopDetection';
import type { LoopPolicy as _agentloop_v1_LoopPolicy, LoopPolicy__Output as _agentloop_v1_LoopPolicy__Output } from './agentloop/v1/LoopPolicy';
import type { Memory as _agentloop_v1_Memory, Memory__Output as _agentloop_v1_Memory__Output } from './agentloop/v1/Memory';
import type { Message as _agentloop_v1_Message, Message__Output as _agentloop_v1_Message__Output } from './agentloop/v1/Message';
import type { NextStepRule as _agentloop_v1_NextStepRule, NextStepRule__Output as _agentloop_v1_NextStepRule__Output } from './agentloop/v1/NextStepRule';
import type { NodeEnd as _agentloop_v1_NodeEnd, NodeEnd__Output as _agentloop_v1_NodeEnd__Output } from './agentloop/v1/NodeEnd';
import type { NodeStart as _agentloop_v1_NodeStart, NodeStart__Output as _agentloop_v1_NodeStart__Output } from './agentloop/v1/NodeStart';
import type { ResumeRequest as _agentloop_v1_ResumeRequest, ResumeRequest__Output as _agentloop_v1_ResumeRequest__Output } from './agentloop/v1/ResumeRequest';
import type { ResumeResponse as _agentloop_v1_ResumeResponse, ResumeResponse__Output as _agentloop_v1_ResumeResponse__Output } from './agentloop/v1/ResumeResponse';
import type { RunError as _agentloop_v1_RunError, RunError__Output as _agentloop_v1_RunError__Output } from './agentloop/v1/RunError';
import type { RunEvent as _agentloop_v1_RunEvent, RunEvent__Output as _agentloop_v1_RunEvent__Output } from './agentloop/v1/RunEvent';
import type { RunFinal as _agentloop_v1_RunFinal, RunFinal__Output as _agentloop_v1_RunFinal__Output } from './agentloop/v1/RunFinal';
import type { RunInfo as _agentloop_v1_RunInfo, RunInfo__Output as _agentloop_v1_RunInfo__Output } from './agentloop/v1/RunInfo';
import type { RunMetadata as _agentloop_v1_RunMetadata, RunMetadata__Output as _agentloop_v1_RunMetadata__Output } from './agentloop/v1/RunMetadata';
import type { RunOptions as _agentloop_v1_RunOptions, RunOptions__Output as _agentloop_v1_RunOptions__Output } from './agentloop/v1/RunOptions';
import type { RunRequest as _agentloop_v1_RunRequest, RunRequest__Output as _agentloop_v1_RunRequest__Output } from './agentloop/v1/RunRequest';
import type { RunResponse as _agentloop_v1_RunResponse, RunResponse__Output as _agentloop_v1_RunResponse__Output } from './agentloop/v1/RunResponse';
import type { ThreadSummary as _agentloop_v1_ThreadSummary, ThreadSummary__Output as _agentloop_v1_ThreadSummary__Output } from './agentloop/v1/ThreadSummary';
import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from './agentloop/v1/ToolCall';
import type { ToolChoice as _agentloop_v1_ToolChoice, ToolChoice__Output as _agentloop_v1_ToolChoice__Output } from './agentloop/v1/ToolChoice';
import type { ToolEnd as _agentloop_v1_ToolEnd, ToolEnd__Output as _agentloop_v1_ToolEnd__Output } from './agentloop/v1/ToolEnd';
import type { ToolResult as _agentloop_v1_ToolResult, ToolResult__Output as _agentloop_v1_ToolResult__Output } from './agentloop/v1/ToolResult';
import type { ToolSpec as _agentloop_v1_ToolSpec, ToolSpec__Output as _agentloop_v1_ToolSpec__Output } from './agentloop/v1/ToolSpec';
import type { ToolStart as _agentloop_v1_ToolStart, ToolStart__Output as _agentloop_v1_ToolStart__Output } from './agentloop/v1/ToolStart';
import type { Usage as _agentloop_v1_Usage, Usage__Output as _agentloop_v1_Usage__Output } from './agentloop/v1/Usage';
import type { WatchRequest as _agentloop_v1_WatchRequest, WatchRequest__Output as _agentloop_v1_WatchRequest__Output } from './agentloop/v1/WatchRequest';
import type { WatchResponse as _agentloop_v1_WatchResponse, WatchResponse__Output as _agentloop_v1_WatchResponse__Output } from './agentloop/v1/WatchResponse';
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
import type { ListValue as _google_protobuf_ListValue, ListValue__Output as _google_protobuf_ListValue__Output } from './google/protobuf/ListValue';
import type { MessageOptions as _google_protobuf_MessageOptions, MessageOptions__Output as _google_protobuf_MessageOptions__Output } from './google/protobuf/MessageOptions';
import type { MethodDescriptorProto as _google_protobuf_MethodDescriptorProto, MethodDescriptorProto__Output as _google_protobuf_MethodDescriptorProto__Output } from './google/protobuf/MethodDescriptorProto';
import type { MethodOptions as _google_protobuf_MethodOptions, MethodOptions__Output as _google_protobuf_MethodOptions__Output } from './google/protobuf/MethodOptions';
import type { OneofDescriptorProto as _google_protobuf_OneofDescriptorProto, OneofDescriptorProto__Output as _google_protobuf_OneofDescriptorProto__Output } from './google/protobuf/OneofDescriptorProto';
import type { OneofOptions as _google_protobuf_OneofOptions, OneofOptions__Output as _google_protobuf_OneofOptions__Output } from './google/protobuf/OneofOptions';
import type { ServiceDescriptorProto as _google_protobuf_ServiceDescriptorProto, ServiceDescriptorProto__Output as _google_protobuf_ServiceDescriptorProto__Output } from './google/protobuf/ServiceDescriptorProto';
import type { ServiceOptions as _google_protobuf_ServiceOptions, ServiceOptions__Output as _google_protobuf_ServiceOptions__Output } from './google/protobuf/ServiceOptions';
import type { SourceCodeInfo as _google_protobuf_SourceCodeInfo, SourceCodeInfo__Output as _google_protobuf_SourceCodeInfo__Output } from './google/protobuf/SourceCodeInfo';
import type { Struct as _google_protobuf_Struct, Struct__Output as _google_protobuf_Struct__Output } from './google/protobuf/Struct';
import type { Timestamp as _google_protobuf_Timestamp, Timestamp__Output as _google_protobuf_Timestamp__Output } from './google/protobuf/Timestamp';
import type { UninterpretedOption as _google_protobuf_UninterpretedOption, UninterpretedOption__Output as _google_protobuf_UninterpretedOption__Output } from './google/protobuf/UninterpretedOption';
import type { Value as _google_protobuf_Value, Value__Output as _google_protobuf_Value__Output } from './google/protobuf/Value';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  agentloop: {
    v1: {
      /**
       * The agent loop as a service. Runs are durable: every node transition is
       * checkpointed before the next node starts, so a run survives the gateway
       * that started it and can be resumed, watched or cancelled from any gateway
       * sharing the same database.
       */
      Agent: SubtypeConstructor<typeof grpc.Client, _agentloop_v1_AgentClient> & { service: _agentloop_v1_AgentDefinition }
      ApprovalDecision: MessageTypeDefinition<_agentloop_v1_ApprovalDecision, _agentloop_v1_ApprovalDecision__Output>
      CancelRequest: MessageTypeDefinition<_agentloop_v1_CancelRequest, _agentloop_v1_CancelRequest__Output>
      CancelResponse: MessageTypeDefinition<_agentloop_v1_CancelResponse, _agentloop_v1_CancelResponse__Output>
      Checkpoint: MessageTypeDefinition<_agentloop_v1_Checkpoint, _agentloop_v1_Checkpoint__Output>
      ConcurrencyPolicy: EnumTypeDefinition
      Decision: MessageTypeDefinition<_agentloop_v1_Decision, _agentloop_v1_Decision__Output>
      DecisionKind: EnumTypeDefinition
      DeleteMemoryRequest: MessageTypeDefinition<_agentloop_v1_DeleteMemoryRequest, _agentloop_v1_DeleteMemoryRequest__Output>
      DeleteMemoryResponse: MessageTypeDefinition<_agentloop_v1_DeleteMemoryResponse, _agentloop_v1_DeleteMemoryResponse__Output>
      ForkThreadRequest: MessageTypeDefinition<_agentloop_v1_ForkThreadRequest, _agentloop_v1_ForkThreadRequest__Output>
      ForkThreadResponse: MessageTypeDefinition<_agentloop_v1_ForkThreadResponse, _agentloop_v1_ForkThreadResponse__Output>
      GetThreadRequest: MessageTypeDefinition<_agentloop_v1_GetThreadRequest, _agentloop_v1_GetThreadRequest__Output>
      GetThreadResponse: MessageTypeDefinition<_agentloop_v1_GetThreadResponse, _agentloop_v1_GetThreadResponse__Output>
      InjectedContext: MessageTypeDefinition<_agentloop_v1_InjectedContext, _agentloop_v1_InjectedContext__Output>
      Interrupt: MessageTypeDefinition<_agentloop_v1_Interrupt, _agentloop_v1_Interrupt__Output>
      InvokeRequest: MessageTypeDefinition<_agentloop_v1_InvokeRequest, _agentloop_v1_InvokeRequest__Output>
      InvokeResponse: MessageTypeDefinition<_agentloop_v1_InvokeResponse, _agentloop_v1_InvokeResponse__Output>
      ListCheckpointsRequest: MessageTypeDefinition<_agentloop_v1_ListCheckpointsRequest, _agentloop_v1_ListCheckpointsRequest__Output>
      ListCheckpointsResponse: MessageTypeDefinition<_agentloop_v1_ListCheckpointsResponse, _agentloop_v1_ListCheckpointsResponse__Output>
      ListMemoriesRequest: MessageTypeDefinition<_agentloop_v1_ListMemoriesRequest, _agentloop_v1_ListMemoriesRequest__Output>
      ListMemoriesResponse: MessageTypeDefinition<_agentloop_v1_ListMemoriesResponse, _agentloop_v1_ListMemoriesResponse__Output>
      ListRunsRequest: MessageTypeDefinition<_agentloop_v1_ListRunsRequest, _agentloop_v1_ListRunsRequest__Output>
      ListRunsResponse: MessageTypeDefinition<_agentloop_v1_ListRunsResponse, _agentloop_v1_ListRunsResponse__Output>
      ListThreadsRequest: MessageTypeDefinition<_agentloop_v1_ListThreadsRequest, _agentloop_v1_ListThreadsRequest__Output>
      ListThreadsResponse: MessageTypeDefinition<_agentloop_v1_ListThreadsResponse, _agentloop_v1_ListThreadsResponse__Output>
      LlmToken: MessageTypeDefinition<_agentloop_v1_LlmToken, _agentloop_v1_LlmToken__Output>
      LoopDetection: MessageTypeDefinition<_agentloop_v1_LoopDetection, _agentloop_v1_LoopDetection__Output>
      LoopPolicy: MessageTypeDefinition<_agentloop_v1_LoopPolicy, _agentloop_v1_LoopPolicy__Output>
      Memory: MessageTypeDefinition<_agentloop_v1_Memory, _agentloop_v1_Memory__Output>
      Message: MessageTypeDefinition<_agentloop_v1_Message, _agentloop_v1_Message__Output>
      NextStepRule: MessageTypeDefinition<_agentloop_v1_NextStepRule, _agentloop_v1_NextStepRule__Output>
      NextStepTrigger: EnumTypeDefinition
      NodeEnd: MessageTypeDefinition<_agentloop_v1_NodeEnd, _agentloop_v1_NodeEnd__Output>
      NodeStart: MessageTypeDefinition<_agentloop_v1_NodeStart, _agentloop_v1_NodeStart__Output>
      ResumeRequest: MessageTypeDefinition<_agentloop_v1_ResumeRequest, _agentloop_v1_ResumeRequest__Output>
      ResumeResponse: MessageTypeDefinition<_agentloop_v1_ResumeResponse, _agentloop_v1_ResumeResponse__Output>
      Role: EnumTypeDefinition
      RunError: MessageTypeDefinition<_agentloop_v1_RunError, _agentloop_v1_RunError__Output>
      RunEvent: MessageTypeDefinition<_agentloop_v1_RunEvent, _agentloop_v1_RunEvent__Output>
      RunFinal: MessageTypeDefinition<_agentloop_v1_RunFinal, _agentloop_v1_RunFinal__Output>
      RunInfo: MessageTypeDefinition<_agentloop_v1_RunInfo, _agentloop_v1_RunInfo__Output>
      RunMetadata: MessageTypeDefinition<_agentloop_v1_RunMetadata, _agentloop_v1_RunMetadata__Output>
      RunOptions: MessageTypeDefinition<_agentloop_v1_RunOptions, _agentloop_v1_RunOptions__Output>
      RunRequest: MessageTypeDefinition<_agentloop_v1_RunRequest, _agentloop_v1_RunRequest__Output>
      RunResponse: MessageTypeDefinition<_agentloop_v1_RunResponse, _agentloop_v1_RunResponse__Output>
      RunStatus: EnumTypeDefinition
      StopReason: EnumTypeDefinition
      StreamMode: EnumTypeDefinition
      ThreadSummary: MessageTypeDefinition<_agentloop_v1_ThreadSummary, _agentloop_v1_ThreadSummary__Output>
      ToolCall: MessageTypeDefinition<_agentloop_v1_ToolCall, _agentloop_v1_ToolCall__Output>
      ToolChoice: MessageTypeDefinition<_agentloop_v1_ToolChoice, _agentloop_v1_ToolChoice__Output>
      ToolChoiceMode: EnumTypeDefinition
      ToolEnd: MessageTypeDefinition<_agentloop_v1_ToolEnd, _agentloop_v1_ToolEnd__Output>
      ToolErrorKind: EnumTypeDefinition
      ToolResult: MessageTypeDefinition<_agentloop_v1_ToolResult, _agentloop_v1_ToolResult__Output>
      ToolSpec: MessageTypeDefinition<_agentloop_v1_ToolSpec, _agentloop_v1_ToolSpec__Output>
      ToolStart: MessageTypeDefinition<_agentloop_v1_ToolStart, _agentloop_v1_ToolStart__Output>
      Usage: MessageTypeDefinition<_agentloop_v1_Usage, _agentloop_v1_Usage__Output>
      WatchRequest: MessageTypeDefinition<_agentloop_v1_WatchRequest, _agentloop_v1_WatchRequest__Output>
      WatchResponse: MessageTypeDefinition<_agentloop_v1_WatchResponse, _agentloop_v1_WatchResponse__Output>
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
      ListValue: MessageTypeDefinition<_google_protobuf_ListValue, _google_protobuf_ListValue__Output>
      MessageOptions: MessageTypeDefinition<_google_protobuf_MessageOptions, _google_protobuf_MessageOptions__Output>
      MethodDescriptorProto: MessageTypeDefinition<_google_protobuf_MethodDescriptorProto, _google_protobuf_MethodDescriptorProto__Output>
      MethodOptions: MessageTypeDefinition<_google_protobuf_MethodOptions, _google_protobuf_MethodOptions__Output>
      NullValue: EnumTypeDefinition
      OneofDescriptorProto: MessageTypeDefinition<_google_protobuf_OneofDescriptorProto, _google_protobuf_OneofDescriptorProto__Output>
      OneofOptions: MessageTypeDefinition<_google_protobuf_OneofOptions, _google_protobuf_OneofOptions__Output>
      ServiceDescriptorProto: MessageTypeDefinition<_google_protobuf_ServiceDescriptorProto, _google_protobuf_ServiceDescriptorProto__Output>
      ServiceOptions: MessageTypeDefinition<_google_protobuf_ServiceOptions, _google_protobuf_ServiceOptions__Output>
      SourceCodeInfo: MessageTypeDefinition<_google_protobuf_SourceCodeInfo, _google_protobuf_SourceCodeInfo__Output>
      Struct: MessageTypeDefinition<_google_protobuf_Struct, _google_protobuf_Struct__Output>
      SymbolVisibility: EnumTypeDefinition
      Timestamp: MessageTypeDefinition<_google_protobuf_Timestamp, _google_protobuf_Timestamp__Output>
      UninterpretedOption: MessageTypeDefinition<_google_protobuf_UninterpretedOption, _google_protobuf_UninterpretedOption__Output>
      Value: MessageTypeDefinition<_google_protobuf_Value, _google_protobuf_Value__Output>
    }
    rpc: {
      Code: EnumTypeDefinition
    }
  }
}

