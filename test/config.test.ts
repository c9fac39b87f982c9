import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';

describe('config', () => {
  it('accepts the Claude Desktop mcpServers shape and fills defaults', () => {
    const r = parseConfig({
      mcpServers: {
        files: { command: 'npx', args: ['-y', 'server'], env: { A: '1' }, cwd: '/tmp' },
        web: { url: 'http://127.0.0.1:9000/mcp', headers: { authorization: 'x' } },
        old: { url: 'http://127.0.0.1:9001/sse', transport: 'sse' },
      },
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.servers.map((s) => [s.name, s.kind])).toEqual([
      ['files', 'stdio'],
      ['web', 'http'],
      ['old', 'http'],
    ]);
    expect(r.value.gateway).toMatchObject({ host: '127.0.0.1', port: 8787, path: '/mcp', requestStateTtlSeconds: 600 });
    expect(Object.isFrozen(r.value.gateway)).toBe(true);
  });

  it('lists every problem at once', () => {
    const r = parseConfig({
      mcpServers: { 'bad name!': { command: 'x' }, ok: { command: '' }, web: { url: 'ftp://x' } },
      gateway: { port: 70000, unknownKey: 1 },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.length).toBeGreaterThanOrEqual(4);
    expect(r.error.join('\n')).toMatch(/mcpServers/);
    expect(r.error.join('\n')).toMatch(/gateway/);
  });

  it('resolves API keys from the environment and reports missing ones', () => {
    const base = { mcpServers: { a: { command: 'x' } } };
    const ok = parseConfig({ ...base, gateway: { apiKeys: [{ principal: 'alice', keyEnv: 'ALICE_KEY' }] } }, { ALICE_KEY: 'k'.repeat(20) });
    expect(ok.ok && ok.value.apiKeys.get('k'.repeat(20))).toBe('alice');
    const missing = parseConfig({ ...base, gateway: { apiKeys: [{ principal: 'alice', keyEnv: 'NOPE' }] } }, {});
    expect(missing.ok).toBe(false);
  });
});
