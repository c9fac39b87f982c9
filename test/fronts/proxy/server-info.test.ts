import { describe, expect, it } from 'vitest';
import { parseServerEntry, type ServerConfig } from '../../../src/config.js';
import { shownArgs, shownUrl, whereIs } from '../../../src/fronts/proxy/server-info.js';

const entry = (name: string, raw: unknown): ServerConfig => {
  const parsed = parseServerEntry(name, raw);
  if (!parsed.ok) throw new Error(parsed.error.join('; '));
  return parsed.value;
};

describe('server-info (where a server is, without its secrets)', () => {
  it('keeps a URL without credentials, query values or fragment', () => {
    expect(shownUrl('https://u:pw@example.com:8443/mcp?token=abc&x=1&x=2#frag')).toBe('https://example.com:8443/mcp?token=…&x=…');
    expect(shownUrl('http://127.0.0.1:9/mcp')).toBe('http://127.0.0.1:9/mcp');
    expect(shownUrl('not a url')).toBe('…');
  });

  it('keeps back arguments that follow, or are, a flag named like a secret', () => {
    expect(shownArgs(['-y', 'pkg', '--api-key', 'k1', '--token=t1', 'PASSWORD=p1', '--auth', '--verbose', '--path', '/tmp', 'Authorization=Bearer x'])).toEqual(
      ['-y', 'pkg', '--api-key', '…', '--token=…', 'PASSWORD=…', '--auth', '--verbose', '--path', '/tmp', 'Authorization=…'],
    );
  });

  it('shows neither env nor header values', () => {
    const stdio = whereIs(entry('s', { command: 'npx', args: ['-y', 'srv'], env: { API_KEY: 'env-secret' } }));
    expect(stdio).toEqual({ command: 'npx', args: ['-y', 'srv'] });
    const http = whereIs(entry('h', { url: 'http://127.0.0.1:1/mcp', headers: { authorization: 'Bearer header-secret' } }));
    expect(http).toEqual({ url: 'http://127.0.0.1:1/mcp', transport: 'streamable-http' });
    expect(JSON.stringify([stdio, http])).not.toMatch(/secret/);
  });
});
