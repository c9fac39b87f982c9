/**
 * What every 2026-07-28 result needs (basic/index.mdx "resultType", server/utilities/caching.mdx):
 * `resultType`, the gateway's identity in `_meta["io.modelcontextprotocol/serverInfo"]`, and on
 * discover/list/read results `ttlMs` + `cacheScope`. Legacy backends give none of these.
 */
import type { InputRequiredResult, InputRequests } from '@modelcontextprotocol/server';
import { META } from './envelope.js';

export interface ResultStamp {
  readonly serverInfo: { name: string; version: string };
  readonly cacheTtlMs: number;
  readonly cacheScope: 'public' | 'private';
}

/** A complete result: backend fields kept, `resultType: "complete"`, serverInfo in `_meta`. */
export function completeResult(result: Record<string, unknown>, stamp: ResultStamp, cacheable = false): Record<string, unknown> {
  // Keys set by assignment, not as computed keys of a literal (each of those is a runtime call in V8).
  const meta: Record<string, unknown> = { ...(result['_meta'] as Record<string, unknown> | undefined) };
  meta[META.serverInfo] = stamp.serverInfo;
  const out: Record<string, unknown> = { ...result, resultType: 'complete', _meta: meta };
  if (cacheable) {
    out['ttlMs'] = stamp.cacheTtlMs;
    out['cacheScope'] = stamp.cacheScope;
  }
  return out;
}

/** An `input_required` result (never cacheable), typed by the SDK's `InputRequiredResult`. */
export function inputRequiredResult(inputRequests: Record<string, unknown>, requestState: string, stamp: ResultStamp): Record<string, unknown> {
  const result: InputRequiredResult = {
    resultType: 'input_required',
    inputRequests: inputRequests as InputRequests,
    requestState,
    _meta: { [META.serverInfo]: stamp.serverInfo },
  };
  return result as unknown as Record<string, unknown>;
}
