/** Reading an MRTR round request: the name, the answers, what its requestState is bound to, and when its call may become a task. */
import { describe, expect, it } from 'vitest';
import { WireCode } from '../../../src/errors.js';
import type { FrontRequest } from '../../../src/protocol/rev-2026-07-28/envelope.js';
import { digestOnDemand, promotionFor, readRoundRequest, requestDigest } from '../../../src/fronts/mrtr/round-request.js';
import type { TaskPolicy } from '../../../src/fronts/tasks/policy.js';
import { nodeDigest } from '../../../src/protocol/request-state.js';
import { webDigest } from '../../../src/protocol/state-codec.js';

const request = (method: string, params: Record<string, unknown>): FrontRequest => ({ id: 1, method, params, capabilities: {}, paramHeader: () => undefined });
const ANSWER = { user_name: { action: 'accept', content: { name: 'Lin' } } };

describe('readRoundRequest', () => {
  it('binds every param but inputResponses, requestState and _meta, and forwards them without the 2025-11-25 task hint', () => {
    const read = readRoundRequest(
      request('tools/call', {
        name: 'echo',
        arguments: { text: 'x' },
        task: { ttl: 1 },
        extra: 1,
        inputResponses: ANSWER,
        requestState: 'st',
        _meta: { k: 1 },
      }),
    );
    expect(read).toEqual({
      field: 'name',
      name: 'echo',
      answers: ANSWER,
      requestState: 'st',
      bound: { name: 'echo', arguments: { text: 'x' }, task: { ttl: 1 }, extra: 1 },
      forwarded: { name: 'echo', arguments: { text: 'x' }, extra: 1 },
    });
  });

  it('names a resource by its uri', () => {
    expect(readRoundRequest(request('resources/read', { uri: 'file:///a' }))).toMatchObject({ field: 'uri', name: 'file:///a', answers: undefined });
  });

  it.each([
    ['a missing name', request('tools/call', {}), /params\.name must be a non-empty string/],
    ['an empty uri', request('resources/read', { uri: '' }), /params\.uri must be a non-empty string/],
    ['malformed inputResponses', request('prompts/get', { name: 'p', inputResponses: { k: 'not an object' } }), /inputResponses/],
  ])('refuses %s with -32602', (_what, req, message) => {
    expect(() => readRoundRequest(req)).toThrow(expect.objectContaining({ code: WireCode.InvalidParams, message: expect.stringMatching(message) }));
  });
});

describe('requestDigest', () => {
  it('is the same for the same method and bound params, whatever their order, and differs for another method', async () => {
    const a = await requestDigest('tools/call', { name: 'echo', arguments: { a: 1, b: 2 } }, nodeDigest);
    expect(await requestDigest('tools/call', { arguments: { b: 2, a: 1 }, name: 'echo' }, nodeDigest)).toBe(a);
    expect(await requestDigest('prompts/get', { name: 'echo', arguments: { a: 1, b: 2 } }, nodeDigest)).not.toBe(a);
  });

  it('refuses params too deep to digest with -32602', async () => {
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) deep = { deep };
    await expect(requestDigest('tools/call', { name: 'x', arguments: deep }, nodeDigest)).rejects.toMatchObject({ code: WireCode.InvalidParams });
  });
});

describe('digestOnDemand', () => {
  it('reads the digest requestDigest computes', async () => {
    const bound = { name: 'echo', arguments: { b: [1, { c: null }], a: 'x' } };
    expect(digestOnDemand('tools/call', bound, nodeDigest).digest).toBe(await requestDigest('tools/call', bound, nodeDigest));
  });

  it('is the same on Web Crypto (the edge handler) as on node:crypto, and is made once', async () => {
    const bound = { name: 'echo', arguments: { b: [1, { c: null }], a: 'x', s: 'é ✓' } };
    const web = digestOnDemand('tools/call', bound, webDigest);
    expect(await web.digest).toBe(nodeDigest({ method: 'tools/call', params: bound }));
    expect(web.digest).toBe(web.digest);
  });

  it('refuses params too deep to digest at once with -32602, exactly where requestDigest does', async () => {
    const nested = (levels: number): Record<string, unknown> => {
      let deep: Record<string, unknown> = {};
      for (let i = 1; i < levels; i++) deep = { deep };
      return deep;
    };
    for (const levels of [125, 126, 127, 200]) {
      const bound = { name: 'x', arguments: nested(levels), list: [[nested(2)]] };
      const eager = await requestDigest('tools/call', bound, nodeDigest).then(
        () => 'ok',
        (e: unknown) => (e as { code?: number }).code,
      );
      let lazy: string | number | undefined = 'ok';
      try {
        digestOnDemand('tools/call', bound, nodeDigest);
      } catch (e) {
        lazy = (e as { code?: number }).code;
      }
      expect(lazy, `${levels} levels`).toBe(eager);
    }
    expect(() => digestOnDemand('tools/call', { arguments: nested(200) }, webDigest)).toThrow(expect.objectContaining({ code: WireCode.InvalidParams }));
  });
});

describe('promotionFor', () => {
  const policy = (support: TaskPolicy['support'], promoteAfterMs = 500): TaskPolicy => ({ support, promoteAfterMs });

  it.each([
    ['optional, declared', policy('optional'), { declared: true }, 500],
    ['optional, not declared', policy('optional'), { declared: false }, undefined],
    ['optional, the draft hint', policy('optional'), { declared: false, hintMs: 20 }, 20],
    ['required, declared', policy('required', 0), { declared: true }, 0],
    ['required, the draft hint', policy('required'), { declared: false, hintMs: 0 }, 0],
    ['forbidden, declared', policy('forbidden'), { declared: true }, undefined],
    ['forbidden, the draft hint', policy('forbidden'), { declared: true, hintMs: 20 }, undefined],
  ])('%s', (_what, p, ask, expected) => {
    expect(promotionFor(p, ask, 'tool')).toBe(expected);
  });

  it('refuses a required tool to a request that did not ask for tasks with -32021 naming the extension', () => {
    expect(() => promotionFor(policy('required'), { declared: false }, 'slow')).toThrow(
      expect.objectContaining({
        code: WireCode.MissingRequiredClientCapability,
        message: expect.stringMatching(/slow runs as a task/),
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      }),
    );
  });
});
