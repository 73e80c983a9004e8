// Original file: protos/agentloop/v1/reasoner.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ListModelsRequest as _agentloop_v1_ListModelsRequest, ListModelsRequest__Output as _agentloop_v1_ListModelsRequest__Output } from '../../agentloop/v1/ListModelsRequest';
import type { ListModelsResponse as _agentloop_v1_ListModelsResponse, ListModelsResponse__Output as _agentloop_v1_ListModelsResponse__Output } from '../../agentloop/v1/ListModelsResponse';
import type { StepRequest as _agentloop_v1_StepRequest, StepRequest__Output as _agentloop_v1_StepRequest__Output } from '../../agentloop/v1/StepRequest';
import type { StepResponse as _agentloop_v1_StepResponse, StepResponse__Output as _agentloop_v1_StepResponse__Output } from '../../agentloop/v1/StepResponse';
import type { StreamStepRequest as _agentloop_v1_StreamStepRequest, StreamStepRequest__Output as _agentloop_v1_StreamStepRequest__Output } from '../../agentloop/v1/StreamStepRequest';
import type { StreamStepResponse as _agentloop_v1_StreamStepResponse, StreamStepResponse__Output as _agentloop_v1_StreamStepResponse__Output } from '../../agentloop/v1/StreamStepResponse';

/**
 * One LLM step, unary or streamed.
 */
export interface ReasonerClient extends grpc.Client {
  /**
   * Lists the models this Reasoner serves by name (CompletionParams.model):
   * the gateway reads it to refuse a run naming an unknown model before any
   * model call.
   */
  ListModels(argument: _agentloop_v1_ListModelsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _agentloop_v1_ListModelsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _agentloop_v1_ListModelsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  ListModels(argument: _agentloop_v1_ListModelsRequest, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists the models this Reasoner serves by name (CompletionParams.model):
   * the gateway reads it to refuse a run naming an unknown model before any
   * model call.
   */
  listModels(argument: _agentloop_v1_ListModelsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _agentloop_v1_ListModelsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _agentloop_v1_ListModelsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  listModels(argument: _agentloop_v1_ListModelsRequest, callback: grpc.requestCallback<_agentloop_v1_ListModelsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Makes one non-streaming completion and returns the assistant message.
   * A step makes at most 1 + AGENTLOOP_MODEL_MAX_RETRIES requests to the
   * endpoint; its errors then carry gRPC server pushback (not to be retried).
   * Errors: INVALID_ARGUMENT for a bad request (the message names the field)
   * or a 400-class refusal of the endpoint (reason CONTEXT_LENGTH_EXCEEDED
   * for a prompt too long); FAILED_PRECONDITION for a refused key or unknown
   * model; PERMISSION_DENIED for 403; UNAVAILABLE when the endpoint cannot
   * be reached, fails, or answers what cannot be read (reason
   * MODEL_ANSWER_MALFORMED); RESOURCE_EXHAUSTED for 429 (RetryInfo from its
   * Retry-After); DEADLINE_EXCEEDED when the caller's deadline passes first.
   * The endpoint's own message is kept in every case.
   */
  Step(argument: _agentloop_v1_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  Step(argument: _agentloop_v1_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  Step(argument: _agentloop_v1_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  Step(argument: _agentloop_v1_StepRequest, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Makes one non-streaming completion and returns the assistant message.
   * A step makes at most 1 + AGENTLOOP_MODEL_MAX_RETRIES requests to the
   * endpoint; its errors then carry gRPC server pushback (not to be retried).
   * Errors: INVALID_ARGUMENT for a bad request (the message names the field)
   * or a 400-class refusal of the endpoint (reason CONTEXT_LENGTH_EXCEEDED
   * for a prompt too long); FAILED_PRECONDITION for a refused key or unknown
   * model; PERMISSION_DENIED for 403; UNAVAILABLE when the endpoint cannot
   * be reached, fails, or answers what cannot be read (reason
   * MODEL_ANSWER_MALFORMED); RESOURCE_EXHAUSTED for 429 (RetryInfo from its
   * Retry-After); DEADLINE_EXCEEDED when the caller's deadline passes first.
   * The endpoint's own message is kept in every case.
   */
  step(argument: _agentloop_v1_StepRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  step(argument: _agentloop_v1_StepRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  step(argument: _agentloop_v1_StepRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  step(argument: _agentloop_v1_StepRequest, callback: grpc.requestCallback<_agentloop_v1_StepResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Makes one streaming completion: content and reasoning tokens as they
   * arrive, then exactly one final message with the assembled tool calls,
   * finish reason and usage. Errors as for Step; an error inside the
   * endpoint's stream is mapped by its code, and the step is not retried
   * once a token was sent.
   */
  StreamStep(argument: _agentloop_v1_StreamStepRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_StreamStepResponse__Output>;
  StreamStep(argument: _agentloop_v1_StreamStepRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_StreamStepResponse__Output>;
  /**
   * Makes one streaming completion: content and reasoning tokens as they
   * arrive, then exactly one final message with the assembled tool calls,
   * finish reason and usage. Errors as for Step; an error inside the
   * endpoint's stream is mapped by its code, and the step is not retried
   * once a token was sent.
   */
  streamStep(argument: _agentloop_v1_StreamStepRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_StreamStepResponse__Output>;
  streamStep(argument: _agentloop_v1_StreamStepRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_agentloop_v1_StreamStepResponse__Output>;
  
}

/**
 * One LLM step, unary or streamed.
 */
export interface ReasonerHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Lists the models this Reasoner serves by name (CompletionParams.model):
   * the gateway reads it to refuse a run naming an unknown model before any
   * model call.
   */
  ListModels: grpc.handleUnaryCall<_agentloop_v1_ListModelsRequest__Output, _agentloop_v1_ListModelsResponse>;
  
  /**
   * Makes one non-streaming completion and returns the assistant message.
   * A step makes at most 1 + AGENTLOOP_MODEL_MAX_RETRIES requests to the
   * endpoint; its errors then carry gRPC server pushback (not to be retried).
   * Errors: INVALID_ARGUMENT for a bad request (the message names the field)
   * or a 400-class refusal of the endpoint (reason CONTEXT_LENGTH_EXCEEDED
   * for a prompt too long); FAILED_PRECONDITION for a refused key or unknown
   * model; PERMISSION_DENIED for 403; UNAVAILABLE when the endpoint cannot
   * be reached, fails, or answers what cannot be read (reason
   * MODEL_ANSWER_MALFORMED); RESOURCE_EXHAUSTED for 429 (RetryInfo from its
   * Retry-After); DEADLINE_EXCEEDED when the caller's deadline passes first.
   * The endpoint's own message is kept in every case.
   */
  Step: grpc.handleUnaryCall<_agentloop_v1_StepRequest__Output, _agentloop_v1_StepResponse>;
  
  /**
   * Makes one streaming completion: content and reasoning tokens as they
   * arrive, then exactly one final message with the assembled tool calls,
   * finish reason and usage. Errors as for Step; an error inside the
   * endpoint's stream is mapped by its code, and the step is not retried
   * once a token was sent.
   */
  StreamStep: grpc.handleServerStreamingCall<_agentloop_v1_StreamStepRequest__Output, _agentloop_v1_StreamStepResponse>;
  
}

export interface ReasonerDefinition extends grpc.ServiceDefinition {
  ListModels: MethodDefinition<_agentloop_v1_ListModelsRequest, _agentloop_v1_ListModelsResponse, _agentloop_v1_ListModelsRequest__Output, _agentloop_v1_ListModelsResponse__Output>
  Step: MethodDefinition<_agentloop_v1_StepRequest, _agentloop_v1_StepResponse, _agentloop_v1_StepRequest__Output, _agentloop_v1_StepResponse__Output>
  StreamStep: MethodDefinition<_agentloop_v1_StreamStepRequest, _agentloop_v1_StreamStepResponse, _agentloop_v1_StreamStepRequest__Output, _agentloop_v1_StreamStepResponse__Output>
}
