/** The edge handler's configuration from its bindings: the gateway.json shape, secrets from string bindings, and what the edge refuses. */
import { describe, expect, it } from 'vitest';
import { edgeConfigOf } from '../../src/edge/edge-config.js';

const KEY = Buffer.alloc(32, 3).toString('base64url');
const MODERN = { url: 'http://127.0.0.1:9/mcp', protocol: '2026-07-28' };

describe('edgeConfigOf', () => {
  it('reads the config object or its JSON text, the keys, and API keys from secret bindings by keyEnv', async () => {
    const file = { mcpServers: { core: MODERN }, gateway: { apiKeys: [{ principal: 'alice', keyEnv: 'ALICE_KEY' }], allowedOrigins: ['https://app.example'] } };
    for (const config of [file, JSON.stringify(file)]) {
      const r = await edgeConfigOf({ MCP_GATEWAY_CONFIG: config, MCP_GATEWAY_STATE_KEYS: KEY, ALICE_KEY: 'alice-secret-0123456789', OTHER: 7 });
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.value.config.servers.map((s) => s.name)).toEqual(['core']);
      expect([...r.value.config.apiKeys.values()]).toEqual(['alice']);
      expect(r.value.config.gateway.allowedOrigins).toEqual(['https://app.example']);
      expect(r.value.stateKeys).toHaveLength(1);
    }
  });

  it('names every problem: missing bindings, bad JSON, bad keys, servers and settings the edge cannot serve', async () => {
    expect(await edgeConfigOf({})).toEqual({
      ok: false,
      error: [
        'MCP_GATEWAY_CONFIG: not set (the gateway.json object: mcpServers and gateway)',
        'MCP_GATEWAY_STATE_KEYS: not set (a secret binding; every edge instance needs the same keys)',
      ],
    });
    const badJson = await edgeConfigOf({ MCP_GATEWAY_CONFIG: '{nope', MCP_GATEWAY_STATE_KEYS: 'short' });
    expect(!badJson.ok && badJson.error).toEqual([
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: not valid JSON/),
      'MCP_GATEWAY_STATE_KEYS: requestState key #1 is not base64url of exactly 32 bytes',
    ]);
    // Where the JSON breaks, never the text around it (a header's secret may sit there).
    const secretNearby = await edgeConfigOf({ MCP_GATEWAY_CONFIG: '{"mcpServers": SECRET-IN-JSON', MCP_GATEWAY_STATE_KEYS: KEY });
    expect(JSON.stringify(!secretNearby.ok && secretNearby.error)).not.toContain('SECRET');
    const refused = await edgeConfigOf({
      MCP_GATEWAY_STATE_KEYS: KEY,
      MCP_GATEWAY_CONFIG: {
        mcpServers: { local: { command: 'node', args: ['s.js'] }, old: { url: 'http://127.0.0.1:9/mcp' }, core: MODERN },
        gateway: { stateDir: '/var/lib/x', proxyTools: { enabled: true }, rateLimits: { requestsPerMinute: 60 } },
      },
    });
    expect(!refused.ok && refused.error).toEqual([
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: mcpServers\.local: a stdio server cannot run at the edge/),
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: mcpServers\.old: the edge reaches 2026-07-28 servers only/),
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: gateway\.stateDir: /),
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: gateway\.rateLimits: /),
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: gateway\.proxyTools: /),
    ]);
  });

  it('refuses gateway.core by name: the edge is not a session core (not the core check of its servers)', async () => {
    const r = await edgeConfigOf({
      MCP_GATEWAY_STATE_KEYS: KEY,
      MCP_GATEWAY_CONFIG: { mcpServers: { core: MODERN }, gateway: { core: true, stateDir: '/x' } },
    });
    expect(!r.ok && r.error).toEqual([
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: gateway\.core: the edge is not a session core/),
      expect.stringMatching(/^MCP_GATEWAY_CONFIG: gateway\.stateDir: /),
    ]);
    expect((await edgeConfigOf({ MCP_GATEWAY_STATE_KEYS: KEY, MCP_GATEWAY_CONFIG: { mcpServers: { core: MODERN }, gateway: { core: false } } })).ok).toBe(true);
  });

  it('passes on what parseConfig refuses, under the binding name, and never echoes a secret', async () => {
    const r = await edgeConfigOf({
      MCP_GATEWAY_STATE_KEYS: KEY,
      MCP_GATEWAY_CONFIG: { mcpServers: { core: MODERN }, gateway: { apiKeys: [{ principal: 'alice', keyEnv: 'ALICE_KEY' }] } },
      ALICE_KEY: 'short-secret',
    });
    expect(!r.ok && r.error).toEqual(['MCP_GATEWAY_CONFIG: gateway.apiKeys.0: the key must be at least 16 characters']);
    expect(JSON.stringify(r)).not.toContain('short-secret');
  });
});
