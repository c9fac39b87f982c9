/** The zod-free tools/call check accepts only what the SDK's schema accepts, and leaves every refusal (and its message) to the schema. */
import { CallToolRequestSchema } from '@modelcontextprotocol/core';
import { describe, expect, it } from 'vitest';
import { checkRequestParams } from '../../../src/protocol/rev-2026-07-28/request-schemas.js';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const CASES: Record<string, unknown>[] = [
  { name: 'echo', arguments: { text: 'x' }, _meta: META },
  { name: 'echo' },
  { name: 'echo', _meta: { ...META, progressToken: 7 } },
  { name: 'echo', _meta: { ...META, progressToken: 'p' } },
  { name: 'echo', extra: [1, 2] },
  { name: 'echo', task: { ttl: 1000 } },
  { name: 'echo', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't' } } },
  { name: 7 },
  {},
  { name: null },
  { name: 'echo', arguments: [] },
  { name: 'echo', arguments: null },
  { name: 'echo', arguments: 'x' },
  { name: 'echo', _meta: null },
  { name: 'echo', _meta: [] },
  { name: 'echo', _meta: 'm' },
  { name: 'echo', _meta: { progressToken: 1.5 } },
  { name: 'echo', _meta: { progressToken: 2 ** 60 } },
  { name: 'echo', _meta: { progressToken: null } },
  { name: 'echo', _meta: { progressToken: {} } },
  { name: 'echo', task: 'soon' },
  { name: 'echo', task: { ttl: 'long' } },
  { name: 'echo', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 1 } } },
];

const verdict = (fn: () => void): string => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as Error).message;
  }
};

describe('checkRequestParams (tools/call)', () => {
  it.each(CASES.map((params) => [JSON.stringify(params), params]))('%s: the same verdict as CallToolRequestSchema', (_, params) => {
    const schema = CallToolRequestSchema.safeParse({ method: 'tools/call', params });
    const ours = verdict(() => checkRequestParams('tools/call', params as Record<string, unknown>));
    expect(ours === 'ok').toBe(schema.success);
    if (!schema.success) expect(ours).toMatch(/^Invalid params: /);
  });
});
