// Types of loader.js: the package object grpc-js builds from the .proto files,
// typed by the generated gen/ files (regenerate with `make ts`).
import type { Options } from '@grpc/proto-loader';
import type { ServiceError } from '@grpc/grpc-js';
import type * as GrpcJs from '@grpc/grpc-js';
import type { ProtoGrpcType as AgentProto } from './gen/agent';
import type { ProtoGrpcType as ReasonerProto } from './gen/reasoner';
import type { ProtoGrpcType as ToolsProto } from './gen/tools';
import type { ProtoGrpcType as StatusProto } from './gen/status';
import type { ProtoGrpcType as ErrorDetailsProto } from './gen/error_details';

/** api.agentloop.v1.Agent, .Reasoner and .ToolService are client constructors. */
export type AgentloopApi = AgentProto & ReasonerProto & ToolsProto & StatusProto & ErrorDetailsProto;

/** One decoded detail of a google.rpc.Status, e.g. {type: 'google.rpc.ErrorInfo', value: {reason, domain, metadata}}. */
export interface StatusDetail {
  type: string;
  value: Record<string, unknown>;
}

/** The google.rpc.Status of a failed call. */
export interface DecodedStatus {
  code: number;
  message: string;
  details: StatusDetail[];
}

/** The @grpc/grpc-js that loadApi() builds its clients with: use its credentials and status codes. */
export declare const grpc: typeof GrpcJs;
export declare const API_FILES: string[];
export declare const STATUS_FILES: string[];
export declare const LOADER_OPTIONS: Options;
export declare const PROTO_ROOT: string;
export declare const GOOGLE_ROOT: string;
export declare function loadApi(): AgentloopApi;
export declare function statusDetails(error: ServiceError | null | undefined): DecodedStatus | null;
