/**
 * Starts and continues input-capable backend calls (tools/call, prompts/get, resources/read).
 *
 * `begin` leases a backend session whose capabilities equal the caller's, starts the backend request
 * and waits for its first outcome; `resume` hands a retry's answers to a parked call and waits for the
 * next one. A front request that goes away while waiting (client disconnect: 2026-07-28
 * cancellation.mdx) cancels the backend request. A session whose call ended without the backend's own
 * answer (cancelled, timed out) is discarded rather than reused, so a late backend request can never
 * reach another call.
 */
import { ulid } from 'ulid';
import { GatewayError, isJsonRpcError } from '../../errors.js';
import type { InputCapabilities } from '../capabilities.js';
import type { Backend } from '../backend/backend.js';
import { CallRun, type CallOutcome, type RoundContext } from './call-run.js';
import type { InputResponseMap } from './input-responses.js';
import type { ParkedCallStore } from './parked-call-store.js';

export interface CallServiceOptions {
  readonly store: ParkedCallStore;
  readonly coalesceMs: number;
  readonly callTimeoutMs: number;
  /** How long a parked call waits for its retry (the requestState lifetime). */
  readonly parkTtlMs: number;
}

export interface BeginRequest {
  /** The legacy backend and the name it knows. */
  readonly route: { readonly backend: Backend; readonly name: string };
  readonly method: string;
  /** Params as the backend gets them. */
  readonly params: Record<string, unknown>;
  readonly principal: string;
  readonly caps: InputCapabilities;
  readonly round: RoundContext;
  readonly prefill?: InputResponseMap | undefined;
}

export type ParkedOutcome = Exclude<CallOutcome, { kind: 'input' }> | (Extract<CallOutcome, { kind: 'input' }> & { run: CallRun });

export class CallService {
  readonly #opts: CallServiceOptions;

  constructor(options: CallServiceOptions) {
    this.#opts = options;
  }

  /** Starts a backend call and waits for its first outcome. */
  async begin(req: BeginRequest, signal: AbortSignal): Promise<ParkedOutcome> {
    const run = new CallRun({ id: ulid(), principal: req.principal, method: req.method, coalesceMs: this.#opts.coalesceMs });
    const timeoutMs = this.#opts.callTimeoutMs;
    run.start(
      async ({ signal: runSignal, onprogress }) => {
        const lease = await req.route.backend.acquire(run, req.caps, runSignal);
        let clean = false;
        try {
          const result = await lease.session.request(req.method, req.params, { signal: runSignal, timeoutMs, onprogress }, run);
          clean = true;
          return result;
        } catch (e) {
          // The backend answered with an error response: its side of the call is over.
          clean = !runSignal.aborted && isJsonRpcError(e) && (e as { code: number }).code !== -32001;
          if (lease.session.closed || (e as Error).message === 'Not connected') throw new GatewayError('backend_closed', req.route.backend.name, { cause: e });
          if (!runSignal.aborted && !(e instanceof GatewayError) && !isJsonRpcError(e)) {
            // A transport failure (connection refused, reset): the session is unusable.
            void lease.session.close();
            throw new GatewayError('backend_unavailable', req.route.backend.name, { cause: e });
          }
          throw e;
        } finally {
          if (!clean && !lease.session.shared) void lease.session.close();
          lease.release();
        }
      },
      req.round,
      req.prefill,
    );
    return this.#next(run, signal);
  }

  /** Continues a parked call with a retry's answers. */
  async resume(run: CallRun, round: RoundContext, responses: InputResponseMap | undefined, signal: AbortSignal): Promise<ParkedOutcome> {
    this.#opts.store.claim(run);
    run.resume(round, responses);
    return this.#next(run, signal);
  }

  async #next(run: CallRun, signal: AbortSignal): Promise<ParkedOutcome> {
    let outcome: CallOutcome;
    try {
      outcome = await run.nextOutcome(signal);
    } catch (e) {
      run.cancel(new GatewayError('cancelled', 'the client went away'));
      throw e;
    }
    if (outcome.kind !== 'input') return outcome;
    const parked = this.#opts.store.park(run, this.#opts.parkTtlMs);
    if (!parked.ok) {
      const error = new GatewayError('parked_call_limit');
      run.cancel(error);
      return { kind: 'error', error };
    }
    return { ...outcome, run };
  }
}
