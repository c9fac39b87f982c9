/**
 * The receiving end of a forward between instances (cluster/forwarder.ts): its head checked before its
 * body is read (`precheck`), then the whole of it, its nonce spent once (`verify`).
 */
import { type Result, err, ok } from '../util/result.js';
import { AT, BOOT, BYTES, FOR_INSTANCE, FOR_PATH, HEAD_SIGNATURE, MAX_AGE_MS, METHODS, NONCE, SIGNATURE, sign, signatureIs } from './forward-signing.js';
import type { InMemoryNonces } from './nonces.js';

/**
 * Why a request on the internal path is refused: no valid fresh signature, one already served, or one
 * signed for no boot of this instance or another one (`misdirected`: nothing was served; send it again
 * for the boot id the answer names).
 */
export type ForwardRefusal = 'forbidden' | 'replayed' | 'misdirected';

/** What a verified forwarded request is for: the public path and its query (the method is the request's own). */
export interface ForwardedFor {
  readonly path: string;
  readonly query: URLSearchParams;
}

/** What the verifier reads of a request on the internal path (a `Request` is one; so is a channel's `CONNECT`). */
export interface ForwardHead {
  readonly method: string;
  readonly headers: { get(name: string): string | null };
}

export interface ForwardVerifierDeps {
  readonly secret: string;
  readonly now: () => number;
  /** This instance's id: a forwarded request signed for another instance is refused. */
  readonly instanceId?: string | undefined;
  /** This process's boot id: the name of `nonces`. */
  readonly boot: string;
  readonly nonces: InMemoryNonces;
}

export function createForwardVerifier(deps: ForwardVerifierDeps) {
  const { now, boot } = deps;
  const local = deps.nonces;
  return {
    /**
     * Whether a request on the internal path may have its body read: a fresh signature of its head
     * (everything but the body, with the body's length), for this instance and this boot, with a nonce
     * not spent yet; how many bytes its body has. Nothing is spent: `verify` checks the whole of it.
     */
    precheck(req: ForwardHead): Result<{ bytes: number }, ForwardRefusal> {
      const method = req.method.toUpperCase();
      const at = req.headers.get(AT);
      const target = req.headers.get(FOR_PATH);
      const given = req.headers.get(HEAD_SIGNATURE);
      const bytes = req.headers.get(BYTES);
      if (!METHODS.has(method) || at === null || target === null || given === null || bytes === null || !/^\d+$/.test(at) || !/^\d{1,10}$/.test(bytes)) {
        return err('forbidden');
      }
      if (Math.abs(now() - Number(at)) > MAX_AGE_MS) return err('forbidden');
      if (
        !signatureIs(
          given,
          sign(deps.secret, `head:${at}`, method, target, bytes, (name) => req.headers.get(name)),
        )
      )
        return err('forbidden');
      if (deps.instanceId !== undefined && req.headers.get(FOR_INSTANCE) !== deps.instanceId) return err('forbidden');
      if (req.headers.get(BOOT) !== boot) return err('misdirected');
      if (local.spent(req.headers.get(NONCE) ?? '')) return err('replayed');
      return ok({ bytes: Number(bytes) });
    },

    /**
     * What a request on the internal path was forwarded for, when it carries a fresh signature of this
     * cluster over its method, target, `body` (the empty string for GET/DELETE), this instance's boot id
     * and a nonce never seen before (the nonce is then spent); `forbidden`, `misdirected` or `replayed`
     * otherwise.
     */
    async verify(req: ForwardHead, body: string): Promise<Result<ForwardedFor, ForwardRefusal>> {
      const method = req.method.toUpperCase();
      const at = req.headers.get(AT);
      const target = req.headers.get(FOR_PATH);
      const given = req.headers.get(SIGNATURE);
      const nonce = req.headers.get(NONCE);
      if (!METHODS.has(method) || at === null || target === null || given === null || nonce === null || !/^\d+$/.test(at) || !target.startsWith('/')) {
        return err('forbidden');
      }
      const age = now() - Number(at);
      if (Math.abs(age) > MAX_AGE_MS) return err('forbidden');
      if (
        !signatureIs(
          given,
          sign(deps.secret, at, method, target, method === 'POST' ? body : '', (name) => req.headers.get(name)),
        )
      )
        return err('forbidden');
      if (deps.instanceId !== undefined && req.headers.get(FOR_INSTANCE) !== deps.instanceId) return err('forbidden');
      // Signed for this boot only: this memory is the one that can spend its nonce.
      if (req.headers.get(BOOT) !== boot) return err('misdirected');
      // Remembered for as long as the signature could still be accepted here (until `at` +
      // MAX_AGE_MS), with a second to spare.
      if (!local.accept(nonce, MAX_AGE_MS - age + 1_000)) return err('replayed');
      const q = target.indexOf('?');
      return ok(q < 0 ? { path: target, query: new URLSearchParams() } : { path: target.slice(0, q), query: new URLSearchParams(target.slice(q + 1)) });
    },
  };
}
