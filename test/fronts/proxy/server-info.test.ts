import { describe, expect, it } from 'vitest';
import { parseServerEntry, type ServerConfig } from '../../../src/config.js';
import { shownArgs, whereIs } from '../../../src/fronts/proxy/server-info.js';
import { shownUrl } from '../../../src/util/uri-for-log.js';

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

  it('keeps back the credentials of a URL argument and arguments that look like tokens (a database URL, a pasted key)', () => {
    const args = [
      '-y',
      '@modelcontextprotocol/server-postgres',
      'postgresql://pguser:PG-PASS@db.internal:5432/prod?sslkey=k',
      '--db=mysql://root:pw@127.0.0.1/x',
      'sk-live-POSITIONAL-SECRET-7',
      'ghp_0123456789abcdefABCDEF0123456789abcd',
      'a1B2c3D4e5F6g7H8i9J0k1L2m3N4',
      'mcp-server-sqlite-npx',
      '/tmp/files',
      'mcp-server-fetch@2025.4.7',
      '--port',
      '8080',
    ];
    expect(shownArgs(args)).toEqual([
      '-y',
      '@modelcontextprotocol/server-postgres',
      'postgresql://db.internal:5432/prod?sslkey=…',
      '--db=mysql://127.0.0.1/x',
      '…',
      '…',
      '…',
      'mcp-server-sqlite-npx',
      '/tmp/files',
      'mcp-server-fetch@2025.4.7',
      '--port',
      '8080',
    ]);
  });

  it("keeps back what a NAME=value argument's value holds (docker's -e), and a connection string's password", () => {
    expect(
      shownArgs([
        'run',
        '-e',
        'DATABASE_URL=postgresql://admin:hunter2@db/prod',
        '-e',
        'MODE=ro',
        'Server=db;User Id=sa;Password=hunter2;',
        '--conn=Host=h;Pwd=x',
      ]),
    ).toEqual(['run', '-e', 'DATABASE_URL=postgresql://db/prod', '-e', 'MODE=ro', 'Server=db;User Id=sa;Password=…;', '--conn=Host=h;Pwd=…']);
  });

  it('shows neither env nor header values', () => {
    const stdio = whereIs(entry('s', { command: 'npx', args: ['-y', 'srv'], env: { API_KEY: 'env-secret' } }));
    expect(stdio).toEqual({ command: 'npx', args: ['-y', 'srv'] });
    const http = whereIs(entry('h', { url: 'http://127.0.0.1:1/mcp', headers: { authorization: 'Bearer header-secret' } }));
    expect(http).toEqual({ url: 'http://127.0.0.1:1/mcp', transport: 'streamable-http' });
    expect(JSON.stringify([stdio, http])).not.toMatch(/secret/);
  });
});
