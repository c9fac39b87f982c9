import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { classify, type InboundRequest } from '../../../src/protocol/rev-2026-07-28/classify.js';

const V = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/clientInfo';
const LEVEL = 'io.modelcontextprotocol/logLevel';
const TASK = 'io.modelcontextprotocol/related-task';

const meta = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ [V]: '2026-07-28', [CAPS]: { elicitation: {} }, ...extra });
const call = (extra: Record<string, unknown> = {}, metaExtra: Record<string, unknown> = {}): Record<string, unknown> => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'x' }, _meta: meta(metaExtra) },
  ...extra,
});
/** A POST with the headers a 2026-07-28 client sends for `tools/call echo`; `undefined` leaves one out. */
const post = (body: unknown, headers: { [K in keyof InboundRequest]?: InboundRequest[K] | undefined } = {}): InboundRequest => {
  const all: Record<string, unknown> = {
    httpMethod: 'POST',
    body,
    protocolVersionHeader: '2026-07-28',
    mcpMethodHeader: 'tools/call',
    mcpNameHeader: 'echo',
    ...headers,
  };
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined)) as unknown as InboundRequest;
};

/** Valid requests and near misses: every part the fast path checks by hand, broken one at a time. */
const CASES: [string, InboundRequest][] = [
  ['a plain call', post(call())],
  ['a string id', post(call({ id: 'a' }))],
  ['a progress token', post(call({}, { progressToken: 'p1' }))],
  ['a numeric progress token', post(call({}, { progressToken: 7 }))],
  ['a fractional progress token', post(call({}, { progressToken: 1.5 }))],
  ['an object progress token', post(call({}, { progressToken: {} }))],
  ['a null progress token', post(call({}, { progressToken: null }))],
  ['client info and log level', post(call({}, { [INFO]: { name: 'c', version: '1' }, [LEVEL]: 'info' }))],
  ['bad client info', post(call({}, { [INFO]: { name: 1 } }))],
  ['a bad log level', post(call({}, { [LEVEL]: 'loud' }))],
  ['bad capabilities', post(call({}, { [CAPS]: 'all' }))],
  ['no capabilities', post({ ...call(), params: { name: 'echo', _meta: { [V]: '2026-07-28' } } })],
  ['a related task', post(call({}, { [TASK]: { taskId: 't' } }))],
  ['a bad related task', post(call({}, { [TASK]: { taskId: 1 } }))],
  ['a fractional id', post(call({ id: 1.5 }))],
  ['an unsafe id', post(call({ id: 2 ** 53 }))],
  ['a negative zero id', post(call({ id: -0 }))],
  ['a null id', post(call({ id: null }))],
  ['no id', post({ jsonrpc: '2.0', method: 'tools/call', params: call()['params'] })],
  ['jsonrpc 1.0', post(call({ jsonrpc: '1.0' }))],
  ['an extra key', post(call({ extra: true }))],
  ['a result key', post(call({ result: {} }))],
  ['an error key', post(call({ error: { code: 1, message: 'x' } }))],
  ['a numeric method', post(call({ method: 5 }))],
  ['an empty method', post(call({ method: '' }), { mcpMethodHeader: '' })],
  ['initialize with the envelope', post(call({ method: 'initialize' }), { mcpMethodHeader: 'initialize' })],
  ['array params', post(call({ params: [1] }))],
  ['no params', post({ jsonrpc: '2.0', id: 1, method: 'tools/call' })],
  ['meta not an object', post(call({ params: { _meta: 'x' } }))],
  ['an older version claimed', post(call({}, { [V]: '2025-11-25' }))],
  ['a later version claimed', post(call({}, { [V]: '2027-01-01' }), { protocolVersionHeader: '2027-01-01' })],
  ['a numeric version', post(call({}, { [V]: 20260728 }))],
  ['a header version that disagrees', post(call(), { protocolVersionHeader: '2025-11-25' })],
  ['a header version with spaces', post(call(), { protocolVersionHeader: ' 2026-07-28 ' })],
  ['no version header', post(call(), { protocolVersionHeader: undefined })],
  ['a method header that disagrees', post(call(), { mcpMethodHeader: 'tools/list' })],
  ['a method header with a tab', post(call(), { mcpMethodHeader: 'tools/call\t' })],
  ['no method header', post(call(), { mcpMethodHeader: undefined })],
  ['a notification', post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { _meta: meta() } })],
  ['a batch', post([call()])],
  ['a GET', { ...post(call()), httpMethod: 'GET' }],
  ['a string body', post('x')],
  ['null', post(null)],
  ['a legacy request', post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { protocolVersionHeader: undefined, mcpMethodHeader: undefined })],
  // After a valid envelope with a null inside: the same with a number JSON.parse reads as Infinity.
  ['a null in the capabilities', post(call({}, { [CAPS]: { experimental: { x: { y: null } } } }))],
  ['an infinite number in the capabilities', post(JSON.parse(JSON.stringify(call()).replace('{"elicitation":{}}', '{"experimental":{"x":{"y":1e400}}}')))],
  ['a huge envelope', post(call({}, { 'vendor.example/blob': 'x'.repeat(10_000) }))],
  ['a __proto__ key', post(JSON.parse('{"jsonrpc":"2.0","id":1,"method":"tools/call","__proto__":{"x":1},"params":{"_meta":{}}}'))],
];

describe('classify', () => {
  it('answers every request as the SDK does, the first time and again once it has seen the envelope', () => {
    for (let pass = 0; pass < 3; pass++) {
      for (const [name, request] of CASES) {
        expect(classify(request), `${name} (pass ${pass})`).toEqual(classifyInboundRequest(request));
      }
    }
  });

  it('answers a body whose envelope it has seen valid without the SDK, and still as the SDK does', () => {
    classify(post(call({ id: 1 })));
    // The same envelope under other ids, methods and progress tokens: the fast path's own checks decide.
    for (const [id, method, token] of [
      [2, 'tools/call', 'a'],
      ['x', 'resources/read', 3],
      [4, 'tools/list', undefined],
    ] as const) {
      const body = call({ id, method }, token === undefined ? {} : { progressToken: token });
      const request = post(body, { mcpMethodHeader: method });
      const classified = classify(request);
      expect(classified).toEqual(classifyInboundRequest(request));
      expect(classified).toMatchObject({ kind: 'modern', messageKind: 'request', message: body });
    }
  });

  it('forgets envelopes when it holds too many, and answers the same after', () => {
    for (let i = 0; i < 600; i++) {
      const request = post(call({}, { [INFO]: { name: `client-${i}`, version: '1' } }));
      expect(classify(request).kind).toBe('modern');
    }
    for (const [name, request] of CASES) expect(classify(request), name).toEqual(classifyInboundRequest(request));
  });
});
