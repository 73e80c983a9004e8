// Original file: protos/agentloop/v1/tools.proto

import type { ToolCall as _agentloop_v1_ToolCall, ToolCall__Output as _agentloop_v1_ToolCall__Output } from '../../agentloop/v1/ToolCall';
import type { InjectedContext as _agentloop_v1_InjectedContext, InjectedContext__Output as _agentloop_v1_InjectedContext__Output } from '../../agentloop/v1/InjectedContext';
import type { Duration as _google_protobuf_Duration, Duration__Output as _google_protobuf_Duration__Output } from '../../google/protobuf/Duration';

/**
 * Request of ToolService.Execute.
 */
export interface ExecuteRequest {
  /**
   * The calls to run; ids must be non-empty and unique within the batch.
   */
  'calls'?: (_agentloop_v1_ToolCall)[];
  /**
   * How many calls may run at once; 0 uses the service default. Must be >= 0.
   */
  'max_concurrency'?: (number);
  /**
   * Scope of the calls' ids; the gateway sends "<run id>/<step>". When set, a
   * call whose (scope, id, name, arguments) already finished recently returns
   * that result instead of running again, and one still running is joined
   * rather than started twice: a gateway that re-issues a batch after a crash
   * never repeats finished work, while a new call that reuses an old id runs.
   * Tools see "<scope>:<id>" as their idempotency key.
   */
  'idempotency_scope'?: (string);
  /**
   * Values for the tools' injected parameters (conversation, user, thread,
   * run metadata). Tools that declare none ignore it.
   */
  'injected'?: (_agentloop_v1_InjectedContext | null);
  /**
   * Per-call timeout; unset uses the service default. Must not be negative.
   */
  'timeout'?: (_google_protobuf_Duration | null);
}

/**
 * Request of ToolService.Execute.
 */
export interface ExecuteRequest__Output {
  /**
   * The calls to run; ids must be non-empty and unique within the batch.
   */
  'calls': (_agentloop_v1_ToolCall__Output)[];
  /**
   * How many calls may run at once; 0 uses the service default. Must be >= 0.
   */
  'max_concurrency': (number);
  /**
   * Scope of the calls' ids; the gateway sends "<run id>/<step>". When set, a
   * call whose (scope, id, name, arguments) already finished recently returns
   * that result instead of running again, and one still running is joined
   * rather than started twice: a gateway that re-issues a batch after a crash
   * never repeats finished work, while a new call that reuses an old id runs.
   * Tools see "<scope>:<id>" as their idempotency key.
   */
  'idempotency_scope': (string);
  /**
   * Values for the tools' injected parameters (conversation, user, thread,
   * run metadata). Tools that declare none ignore it.
   */
  'injected': (_agentloop_v1_InjectedContext__Output | null);
  /**
   * Per-call timeout; unset uses the service default. Must not be negative.
   */
  'timeout': (_google_protobuf_Duration__Output | null);
}
