import { describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../../src/config.js';
import type { BackendPort } from '../../../src/core/backend/port.js';
import { ProxyServers } from '../../../src/fronts/proxy/servers.js';

/** A stand-in backend: these tests are about which servers may be made, not about running them. */
function made(): { create: (c: ServerConfig) => BackendPort; configs: ServerConfig[] } {
  const configs: ServerConfig[] = [];
  const create = (c: ServerConfig): BackendPort => {
    configs.push(c);
    return { name: c.name, start: async () => undefined, close: async () => undefined } as unknown as BackendPort;
  };
  return { create, configs };
}

const allow = { urls: ['http://127.0.0.1:*/mcp', 'https://*.example.com/mcp'], commands: ['npx -y @modelcontextprotocol/server-memory'], maxAdded: 2 };

describe('ProxyServers (add_server allow-list)', () => {
  it('refuses everything when nothing is allowed', async () => {
    const servers = new ProxyServers([], made().create, { urls: [], commands: [], maxAdded: 16 });
    await expect(servers.add({ name: 'a', url: 'http://127.0.0.1:1/mcp' }, 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_NOT_ALLOWED' });
  });

  it.each([
    'http://127.0.0.1:1@evil.com/mcp',
    'http://user:pw@127.0.0.1:1/mcp',
    'https://evil.com/?.example.com/mcp',
    'https://evil.com#.example.com/mcp',
    'https://evil.com\\.example.com/mcp',
    'https://evil.com/x.example.com/mcp',
    'http://127.0.0.1:1/mcp/../../admin',
    'file:///etc/passwd',
    'not a url',
  ])('does not let a star carry %s past the allow-list', async (url) => {
    const { create, configs } = made();
    const servers = new ProxyServers([], create, allow);
    await expect(servers.add({ name: 'x', url }, 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_NOT_ALLOWED' });
    expect(configs).toEqual([]);
  });

  it('adds allowed URLs and whole command lines only, up to maxAdded; only who added a server removes it', async () => {
    const { create, configs } = made();
    const servers = new ProxyServers([], create, allow);
    await servers.add({ name: 'a', url: 'http://127.0.0.1:8080/mcp' }, 'alice');
    await expect(servers.add({ name: 'b', command: 'npx', args: ['-y', 'evil-package'] }, 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_NOT_ALLOWED' });
    await expect(servers.add({ name: 'b', command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory', '--x'] }, 'alice')).rejects.toMatchObject({
      code: 'TOOL_ERR_NOT_ALLOWED',
    });
    await servers.add({ name: 'b', command: 'npx', args: ['-y', '@modelcontextprotocol/server-memory'] }, 'bob');
    await expect(servers.add({ name: 'c', url: 'https://api.example.com/mcp' }, 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_LIMIT' });
    expect(configs.map((c) => c.name)).toEqual(['a', 'b']);
    await expect(servers.add({ name: 'a', url: 'http://127.0.0.1:1/mcp' }, 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_INVALID_ARGUMENTS' });
    await expect(servers.remove('b', 'alice')).rejects.toMatchObject({ code: 'TOOL_ERR_NOT_ALLOWED' });
    await servers.remove('b', 'bob');
    expect(servers.list().map((e) => e.name)).toEqual(['a']);
  });
});
