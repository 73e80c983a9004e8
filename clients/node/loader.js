'use strict';
/**
 * Loads the agentloop.v1 API for @grpc/grpc-js from the .proto files of this
 * repository, with the options the committed TypeScript types in gen/ were
 * generated for. Keep LOADER_OPTIONS and GEN_ARGS (scripts/gen-types.js) in
 * step: the types describe what these options produce.
 *
 * - keepCase: field names as in the .proto files (thread_id, not threadId).
 * - longs: String — int64/uint64 fields (usage token counts, sequence numbers,
 *   created_at seconds) arrive as decimal strings: a JS number loses
 *   precision above 2^53. Send them as strings or numbers.
 * - enums: String — enum fields are their names ("ROLE_USER").
 * - defaults + oneofs: unset fields read as their defaults, and each oneof
 *   has a virtual field naming the member that is set (event: "llm_token").
 *   A member that is not set stays undefined, defaults or not: read the one
 *   the virtual field names (llm_token.content is "token" or "reasoning_token").
 *
 * `grpc` is exported too: a client's credentials and status codes must come
 * from the same @grpc/grpc-js that built the package object, and a script
 * that requires this file by path (from a clone of the repository) resolves
 * no @grpc/grpc-js of its own.
 */
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'protos');
/** google-proto-files ships the google/rpc/*.proto files under its package folder. */
const GOOGLE_ROOT = path.dirname(require.resolve('google-proto-files/package.json'));
/** The API's files, relative to PROTO_ROOT (the stored checkpoint format is not part of it). */
const API_FILES = [
  'agentloop/v1/common.proto',
  'agentloop/v1/agent.proto',
  'agentloop/v1/reasoner.proto',
  'agentloop/v1/tools.proto',
];
/** google.rpc files that describe the error details of a failed call. */
const STATUS_FILES = ['google/rpc/status.proto', 'google/rpc/error_details.proto'];

const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT, GOOGLE_ROOT],
};

/** The grpc-js package object: api.agentloop.v1.Agent is a client constructor. */
function loadApi() {
  const definition = protoLoader.loadSync([...API_FILES, ...STATUS_FILES], LOADER_OPTIONS);
  return grpc.loadPackageDefinition(definition);
}

let statusRoot;
function googleRpc() {
  if (statusRoot === undefined) {
    statusRoot = new protobuf.Root();
    statusRoot.resolvePath = (_origin, target) => path.join(GOOGLE_ROOT, target);
    statusRoot.loadSync(STATUS_FILES, { keepCase: true });
  }
  return statusRoot;
}

/**
 * The google.rpc.Status of a failed call (its `grpc-status-details-bin`
 * trailer), with each detail decoded: [{type: 'google.rpc.ErrorInfo',
 * value: {reason, domain, metadata}}, ...]. Null when the error carries none.
 */
function statusDetails(error) {
  const raw = error && error.metadata ? error.metadata.get('grpc-status-details-bin') : [];
  if (!raw || raw.length === 0) return null;
  const root = googleRpc();
  const Status = root.lookupType('google.rpc.Status');
  const status = Status.toObject(Status.decode(raw[0]), { longs: String, enums: String });
  const details = (status.details || []).map((any) => {
    const typeName = any.type_url.slice(any.type_url.lastIndexOf('/') + 1);
    const type = root.lookupType(typeName);
    return { type: typeName, value: type.toObject(type.decode(any.value), { longs: String, enums: String }) };
  });
  return { code: status.code, message: status.message, details };
}

module.exports = { grpc, API_FILES, STATUS_FILES, LOADER_OPTIONS, PROTO_ROOT, GOOGLE_ROOT, loadApi, statusDetails };
