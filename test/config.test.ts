import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { parseConfig, parseServerEntry } from '../src/config.js';
import { workspaceFolderOf } from '../src/config-folder.js';

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

  it('reads gateway.oauth with its defaults, and refuses an HMAC or none algorithm', () => {
    const servers = { mcpServers: { a: { command: 'x' } } };
    const oauth = { resource: 'https://mcp.example.com/mcp', authorizationServers: [{ issuer: 'https://sso.example.com/realms/tools' }] };
    const parsed = parseConfig({ ...servers, gateway: { oauth } });
    expect(parsed.ok && parsed.value.gateway.oauth).toEqual({
      ...oauth,
      requiredScopes: [],
      algorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
      clockToleranceSeconds: 30,
      timeoutMs: 5_000,
      cooldownMs: 30_000,
      requireAccessTokenType: false,
    });
    for (const alg of ['HS256', 'none']) expect(parseConfig({ ...servers, gateway: { oauth: { ...oauth, algorithms: [alg] } } }).ok).toBe(false);
    expect(parseConfig({ ...servers, gateway: { oauth: { ...oauth, authorizationServers: [] } } }).ok).toBe(false);
  });

  it('reads gateway.policy and refuses a rule naming an undefined group', () => {
    const servers = { mcpServers: { a: { command: 'x' } } };
    const ok = parseConfig({ ...servers, gateway: { policy: { groups: { g: ['bob'] }, rules: [{ groups: ['g'], deny: { tools: ['x*'] } }] } } });
    expect(ok.ok && ok.value.gateway.policy).toEqual({ groups: { g: ['bob'] }, rules: [{ groups: ['g'], deny: { tools: ['x*'] } }], default: 'allow' });
    expect(parseConfig({ ...servers, gateway: { policy: { rules: [{ groups: ['nope'] }] } } })).toEqual({
      ok: false,
      error: ['gateway.policy.rules.0.groups: no group named nope in gateway.policy.groups'],
    });
    expect(parseConfig({ ...servers, gateway: { policy: { rules: [{ allow: { tool: ['typo'] } }] } } }).ok).toBe(false);
  });

  it("reads a backend's auth (client credentials) and the introspection client, their secrets from the environment", () => {
    const auth = { tokenUrl: 'https://sso.example.com/token', clientId: 'gw', clientSecretEnv: 'GW_SECRET', scope: 'files:read files:write' };
    const introspection = { url: 'https://sso.example.com/introspect', clientId: 'gw-rs', clientSecretEnv: 'RS_SECRET' };
    const oauth = { resource: 'https://mcp.example.com/mcp', authorizationServers: [{ issuer: 'https://sso.example.com' }], introspection };
    const file = { mcpServers: { files: { url: 'https://files.example.com/mcp', auth } }, gateway: { oauth } };
    const parsed = parseConfig(file, { GW_SECRET: 's1', RS_SECRET: 's2' });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.servers[0]).toMatchObject({ auth: { ...auth, timeoutMs: 10_000 } });
    expect(parsed.value.gateway.oauth?.introspection).toEqual({ ...introspection, cacheSeconds: 60, audienceOptional: false });
    expect([...parsed.value.secrets]).toEqual([
      ['GW_SECRET', 's1'],
      ['RS_SECRET', 's2'],
    ]);
    const unset = parseConfig(file, {});
    expect(!unset.ok && unset.error).toEqual([
      'mcpServers.files.auth.clientSecretEnv: environment variable GW_SECRET is not set',
      'gateway.oauth.introspection.clientSecretEnv: environment variable RS_SECRET is not set',
    ]);
    const both = parseConfig(
      { mcpServers: { files: { url: 'https://files.example.com/mcp', auth, headers: { Authorization: 'Bearer x' } } } },
      { GW_SECRET: 's1' },
    );
    expect(!both.ok && both.error).toEqual(['mcpServers.files: give either "auth" or an Authorization header, not both']);
    expect(parseConfig({ mcpServers: { f: { command: 'x', auth } } }, { GW_SECRET: 's1' }).ok).toBe(false);
    expect(parseConfig({ mcpServers: { f: { url: 'https://f.example.com/mcp', auth: { ...auth, scope: 'a  b' } } } }, { GW_SECRET: 's1' }).ok).toBe(false);
  });

  it('refuses auth in a server added at run time (its secret would go to a token URL the client chose)', () => {
    const auth = { tokenUrl: 'https://evil.example.com/token', clientId: 'gw', clientSecretEnv: 'GW_SECRET' };
    const r = parseServerEntry('added', { url: 'https://files.example.com/mcp', auth });
    expect(!r.ok && r.error).toEqual(["added.auth: a server added at run time cannot use the gateway's OAuth credentials"]);
  });

  it('reads the admin listener: off unless given, 127.0.0.1:8788 by default, a key required off loopback', () => {
    const servers = { mcpServers: { a: { command: 'x' } } };
    const get = (admin: unknown, env: Record<string, string> = {}) => parseConfig({ ...servers, gateway: { admin } }, env);
    const off = parseConfig(servers);
    expect(off.ok && off.value.gateway.admin).toBeUndefined();
    const loopback = get({});
    expect(loopback.ok && loopback.value.gateway.admin).toMatchObject({ host: '127.0.0.1', port: 8788, refreshMs: 2_000, sampleMs: 5_000 });
    expect(loopback.ok && loopback.value.adminKey).toBeUndefined();
    expect(get({ host: '0.0.0.0' })).toEqual({ ok: false, error: ['gateway.admin: listening on 0.0.0.0 (not loopback) needs a key: set keyEnv'] });
    expect(get({ keyEnv: 'ADMIN' })).toEqual({ ok: false, error: ['gateway.admin.keyEnv: environment variable ADMIN is not set'] });
    expect(get({ keyEnv: 'ADMIN' }, { ADMIN: 'short' })).toEqual({ ok: false, error: ['gateway.admin.keyEnv: the key must be at least 16 characters'] });
    const keyed = get({ host: '0.0.0.0', keyEnv: 'ADMIN' }, { ADMIN: 'admin-key-0123456789' });
    expect(keyed.ok && keyed.value.adminKey).toBe('admin-key-0123456789');
  });

  it('reads the host configs of Claude Code, VS Code and Cursor: type, servers, host-only keys', () => {
    const r = parseConfig({
      servers: {
        a: { type: 'stdio', command: 'node', args: ['x.js'], autoApprove: ['t'], alwaysAllow: ['t'] },
        b: { type: 'http', url: 'http://127.0.0.1:9000/mcp' },
        c: { type: 'sse', url: 'http://127.0.0.1:9001/sse' },
        d: { command: 'off', disabled: true },
      },
      inputs: [{ id: 'x', type: 'promptString' }],
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.servers.map((s) => [s.name, s.kind, s.kind === 'http' ? s.transport : 'stdio'])).toEqual([
      ['a', 'stdio', 'stdio'],
      ['b', 'http', 'streamable-http'],
      ['c', 'http', 'sse'],
    ]);
    expect(r.value.notes.join('\n')).toMatch(/autoApprove: ignored/);
    expect(r.value.notes.join('\n')).toMatch(/"servers" as "mcpServers"/);
  });

  it('says what is missing when an entry has neither command nor url, or an unknown type', () => {
    const r = parseConfig({ mcpServers: { empty: { args: ['x'] }, odd: { type: 'websocket', url: 'http://127.0.0.1:1/' } } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toEqual([
      'mcpServers.empty: give either "command" (a server the gateway starts over stdio) or "url" (an HTTP server)',
      'mcpServers.odd.type: "websocket" is not one of stdio, http, streamable-http, streamableHttp, sse',
    ]);
  });

  it("names the field of a server entry that has the wrong type, where zod said only 'Invalid input'", () => {
    const r = parseConfig({
      mcpServers: {
        args: { command: 'x', args: 'a b' },
        env: { command: 'x', env: { A: 1 } },
        cmd: { command: 42 },
        opts: { command: 'x', maxSessions: 'lots' },
        web: { url: 'http://127.0.0.1:1/', headers: 3 },
        ws: { url: 'ws://127.0.0.1:1/' },
        mixed: { command: 'x', transport: 'sse' },
        both: { command: 'x', url: 'http://127.0.0.1:1/' },
        typed: { type: 'http', command: 'x' },
      },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toEqual([
      // What the entries' shape says first (mixed kinds), then each field's type.
      'mcpServers.mixed.transport: "transport" is for a server with a "url" (HTTP); this one has a "command" (stdio)',
      'mcpServers.both: give either "command" (stdio) or "url" (HTTP), not both',
      'mcpServers.typed.type: "http" is for a server with a "url" (HTTP); this one has a "command" (stdio)',
      'mcpServers.args.args: Invalid input: expected array, received string',
      'mcpServers.env.env.A: Invalid input: expected string, received number',
      'mcpServers.cmd.command: Invalid input: expected string, received number',
      'mcpServers.opts.maxSessions: Invalid input: expected number, received string',
      'mcpServers.web.headers: Invalid input: expected record, received number',
      'mcpServers.ws.url: expected an http:// or https:// URL (an HTTP server; the gateway reaches no other kind)',
    ]);
  });

  it("refuses a server name that begins with another's and the tool name separator (two servers' tools would share a name)", () => {
    const r = parseConfig({ mcpServers: { a: { command: 'x' }, a__b: { command: 'y' } } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toEqual([expect.stringMatching(/^mcpServers\.a__b: its tools' exposed names \(a__b__<tool>\) could be server a's/)]);
    // A name holding the separator with no such neighbour is fine; alone, nothing is prefixed; another separator parts them.
    expect(parseConfig({ mcpServers: { github__enterprise: { command: 'x' }, slack: { command: 'y' } } }).ok).toBe(true);
    expect(parseConfig({ mcpServers: { a__b: { command: 'y' } } }).ok).toBe(true);
    expect(parseConfig({ mcpServers: { a: { command: 'x' }, a__b: { command: 'y' } }, gateway: { toolNameSeparator: '.' } }).ok).toBe(true);
  });

  it('reads a host file with its own top-level settings, ignored with one note', () => {
    const r = parseConfig({ globalShortcut: 'Ctrl+Space', isUsingBuiltInNodeForMcp: true, mcpServers: { a: { command: 'node', args: ['x.js'] } } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.notes.filter((n) => n.includes('top-level'))).toEqual([
      "config: ignored top-level keys (the host's own settings): globalShortcut, isUsingBuiltInNodeForMcp",
    ]);
  });

  it('refuses a header value that is not a byte string at start-up, naming the header', () => {
    const r = parseConfig({ mcpServers: { remote: { url: 'http://127.0.0.1:9000/mcp', headers: { Authorization: 'Bearer …' } } } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.join('\n')).toMatch(/mcpServers\.remote\.headers\.Authorization: header values must be printable Latin-1/);
  });

  it("expands the hosts' variables in command, args, env, cwd, url and headers", () => {
    const r = parseConfig(
      {
        mcpServers: {
          memory: {
            command: 'npx',
            args: ['-y', 'server-memory'],
            env: { MEMORY_FILE_PATH: '${MEMORY_PATH:-${userHome}/memory.jsonl}', TOKEN: '${env:TOKEN}' },
          },
          files: { command: 'node', args: ['${workspaceFolder}/fs.js', '${userHome}/data'], cwd: '${workspaceFolder}' },
          remote: { url: 'http://127.0.0.1:${PORT}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } },
        },
      },
      { TOKEN: 't0k', PORT: '9000', MEMORY_PATH: '' },
      { configDir: '/etc/hosts-dir', userHome: '/home/ada' },
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const [memory, files, remote] = r.value.servers as unknown as Record<string, unknown>[];
    // An empty variable takes its default, as in a shell, and the default's own variables are expanded.
    expect(memory!['env']).toEqual({ MEMORY_FILE_PATH: '/home/ada/memory.jsonl', TOKEN: 't0k' });
    expect(files!['args']).toEqual(['/etc/hosts-dir/fs.js', '/home/ada/data']);
    expect(files!['cwd']).toBe('/etc/hosts-dir');
    expect(remote!['url']).toBe('http://127.0.0.1:9000/mcp');
    expect(remote!['headers']).toEqual({ Authorization: 'Bearer t0k' });
  });

  it('refuses an unset variable without a default, and a VS Code input, naming the server and the variable', () => {
    const r = parseConfig(
      { mcpServers: { a: { command: 'node', args: ['${NOPE}'] }, b: { url: 'http://127.0.0.1:1/mcp', headers: { k: '${input:token}' } } } },
      {},
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.join('\n')).toMatch(/mcpServers\.a\.args\.0: environment variable NOPE is not set/);
    expect(r.error.join('\n')).toMatch(/mcpServers\.b\.headers\.k: \$\{input:token\} asks the host to prompt/);
  });

  it("takes ${workspaceFolder} as the hosts do: the project of a .vscode/mcp.json or .cursor/mcp.json, else the file's folder", () => {
    const project = join('/', 'home', 'me', 'project');
    expect(workspaceFolderOf(join(project, '.vscode', 'mcp.json'))).toBe(project);
    expect(workspaceFolderOf(join(project, '.cursor', 'mcp.json'))).toBe(project);
    expect(workspaceFolderOf(join(project, '.mcp.json'))).toBe(project);
    expect(workspaceFolderOf(join('/', 'home', 'me', '.cursor', 'mcp.json'))).toBe(join('/', 'home', 'me'));
  });
});

describe('config: gateway.rateLimits (issue 29)', () => {
  const servers = { a: { command: 'x' }, b: { command: 'y' } };
  it('is off unless given, and takes each limit on its own', () => {
    const off = parseConfig({ mcpServers: servers });
    expect(off.ok && off.value.gateway.rateLimits).toBeUndefined();
    const on = parseConfig({
      mcpServers: servers,
      gateway: {
        rateLimits: {
          requestsPerMinute: 600,
          burst: 60,
          maxConcurrentCalls: 8,
          perServer: { callsPerMinute: 0.5 },
          servers: { b: { callsPerMinute: 30, burst: 5 } },
        },
      },
    });
    expect(on.ok && on.value.gateway.rateLimits).toEqual({
      requestsPerMinute: 600,
      burst: 60,
      maxConcurrentCalls: 8,
      perServer: { callsPerMinute: 0.5 },
      servers: { b: { callsPerMinute: 30, burst: 5 } },
    });
  });

  it('names every problem: an unknown server, a burst without a rate, a rate of zero', () => {
    const r = parseConfig({ mcpServers: servers, gateway: { rateLimits: { burst: 5, perServer: { callsPerMinute: 0 } } } });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.join('\n')).toMatch(/gateway\.rateLimits\.perServer\.callsPerMinute/);
    const unknown = parseConfig({ mcpServers: servers, gateway: { rateLimits: { burst: 5, servers: { nope: { callsPerMinute: 1 } } } } });
    expect(unknown.ok).toBe(false);
    if (unknown.ok) return;
    expect(unknown.error.join('\n')).toMatch(/gateway\.rateLimits\.burst: burst needs requestsPerMinute/);
    const named = parseConfig({ mcpServers: servers, gateway: { rateLimits: { servers: { nope: { callsPerMinute: 1 } } } } });
    expect(!named.ok && named.error).toEqual(['gateway.rateLimits.servers.nope: no such server in mcpServers']);
  });
});

describe('config: gateway.core (issue 31)', () => {
  it('takes legacy servers, refuses 2026-07-28 ones and the names its other paths take', () => {
    expect(parseConfig({ mcpServers: { files: { command: 'node' }, old: { url: 'http://127.0.0.1:9/mcp' } }, gateway: { core: true } }).ok).toBe(true);
    const r = parseConfig({
      mcpServers: { modern: { url: 'http://127.0.0.1:9/mcp', protocol: '2026-07-28' }, draft: { command: 'node' }, proxy: { command: 'node' } },
      gateway: { core: true, proxyTools: { enabled: true } },
    });
    expect(!r.ok && r.error).toEqual([
      'mcpServers.modern: a session core serves legacy servers; list this 2026-07-28 server at the edge directly',
      expect.stringMatching(/^mcpServers\.draft: with gateway\.core each server is served at <path>\/<name>/),
      expect.stringMatching(/^mcpServers\.proxy: with gateway\.core/),
    ]);
    expect(parseConfig({ mcpServers: { proxy: { command: 'node' } }, gateway: { core: true } }).ok).toBe(true);
  });
});

describe('config: delegating keys (issue 31)', () => {
  /** A config with one stdio server and these API keys. */
  const withKeys = (...apiKeys: Record<string, unknown>[]) => parseConfig({ mcpServers: { s: { command: 'node' } }, gateway: { apiKeys } });

  it('collects the principals whose keys delegate, and refuses a principal with keys of both kinds', () => {
    const ok = withKeys({ principal: 'edge', key: 'e'.repeat(16), delegates: true }, { principal: 'alice', key: 'a'.repeat(16) });
    expect(ok.ok && [...ok.value.delegating]).toEqual(['edge']);
    const mixed = withKeys({ principal: 'edge', key: 'e'.repeat(16), delegates: true }, { principal: 'edge', key: 'f'.repeat(16) });
    expect(!mixed.ok && mixed.error).toEqual(['gateway.apiKeys: principal edge has keys that delegate and keys that do not']);
    const lookalike = withKeys({ principal: 'edge', key: 'e'.repeat(16), delegates: true }, { principal: 'edge/alice', key: 'f'.repeat(16) });
    expect(!lookalike.ok && lookalike.error).toEqual(['gateway.apiKeys: principal edge/alice could be a caller named by edge, whose key delegates']);
  });
});
