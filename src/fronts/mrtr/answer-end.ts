/**
 * The answer to an MRTR request whose call has ended (2026-07-28 basic/patterns/mrtr.mdx): the backend's
 * result; a 2026-07-28 backend's own `input_required`, its requestState sealed inside ours (stateless:
 * any instance can carry the retry on, but only to that backend); a 2026-07-28 backend's own task under
 * a wrapped id; or the call's error, as 2026-07-28 words it (no -32002).
 */
import type { CallOutcome } from '../../core/calls/call.js';
import { ProtocolError, WireCode, bareMessage } from '../../errors.js';
import type { RequestStateCodec } from '../../protocol/request-state.js';
import { completeResult, inputRequiredResult, type ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { relayedTaskResult } from '../../protocol/rev-2026-07-28/tasks.js';
import { traceparentOf } from '../../util/tracing.js';
import type { RemoteTaskIds } from '../tasks/remote.js';
import type { RoundBinding } from './round-request.js';

export interface AnswerEndDeps {
  readonly codec: RequestStateCodec;
  /** This instance (sealed into a stateless backend's round; any instance may carry it on). */
  readonly instanceId: string;
  readonly stamp: ResultStamp;
  readonly remote: RemoteTaskIds;
}

/** Answers a request of `binding` whose call on `backend` ended with `outcome`; throws the call's error. */
export async function answerEnd(deps: AnswerEndDeps, backend: string, outcome: CallOutcome, binding: RoundBinding): Promise<Record<string, unknown>> {
  if (outcome.kind === 'error') throw mapBackendError(binding.method, binding.name, outcome.error);
  const done = outcome.outcome;
  switch (done.kind) {
    case 'complete':
      return completeResult(done.result, deps.stamp, binding.method === 'resources/read');
    case 'input_required': {
      const upstream = { backend, state: done.requestState ?? '' };
      const sealed = await deps.codec.seal({ call: '', instance: deps.instanceId, round: 0, upstream, ...sealedTrace(binding) }, binding);
      return inputRequiredResult(done.inputRequests, sealed, deps.stamp);
    }
    case 'task': {
      // A 2026-07-28 backend's own task (only a caller that declared the extension can get one): its
      // fields pass through under a wrapped id that routes tasks/* back to it, for this principal only.
      const taskId = done.result['taskId'];
      if (typeof taskId !== 'string' || taskId.length === 0)
        throw new ProtocolError(WireCode.InternalError, 'The backend answered with a task without a taskId');
      return relayedTaskResult(done.result, await deps.remote.wrap(backend, taskId, binding.principal), deps.stamp);
    }
  }
}

/**
 * The trace a round's requestState carries on: the call's, as the retry's state sealed it, else the
 * request span's of this (first) round; nothing when tracing is off.
 */
export function sealedTrace(binding: RoundBinding): { trace?: string } {
  const trace = binding.trace ?? traceparentOf();
  return trace === undefined ? {} : { trace };
}

/** Backend errors as 2026-07-28 wants them: no -32002 (now -32602 with `data.uri`). */
export function mapBackendError(method: string, name: string, error: unknown): unknown {
  if (method !== 'resources/read') return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== -32002 && code !== WireCode.InvalidParams) return error;
  const message = bareMessage(String((error as { message?: unknown }).message ?? 'Resource not found'));
  const data = (error as { data?: unknown }).data;
  const merged = data && typeof data === 'object' ? { uri: name, ...(data as object) } : { uri: name };
  return new ProtocolError(WireCode.InvalidParams, message, merged);
}
