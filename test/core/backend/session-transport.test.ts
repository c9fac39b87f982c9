import type { PassThrough } from 'node:stream';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { describe, expect, it, vi } from 'vitest';
import type { ServerConfig } from '../../../src/config.js';
import { Traffic } from '../../../src/core/backend/liveness.js';
import { countTraffic, createSessionTransport } from '../../../src/core/backend/session-transport.js';
import { StreamableHttpLeg } from '../../../src/core/backend/streamable-http-leg.js';
import { silentLogger } from '../../../src/log.js';
import { until } from '../../helpers/until.js';

const noStreamLost = (): void => undefined;

describe('session transports', () => {
  it('gives a server by URL the transport it is configured for', () => {
    const http = { name: 'h', kind: 'http', url: 'http://127.0.0.1:1/mcp', transport: 'streamable-http' } as unknown as ServerConfig;
    expect(createSessionTransport(http, silentLogger, [], noStreamLost)).toBeInstanceOf(StreamableHttpLeg);
    const sse = { ...http, transport: 'sse' } as ServerConfig;
    expect(createSessionTransport(sse, silentLogger, [], noStreamLost)).toBeInstanceOf(SSEClientTransport);
  });

  it.skipIf(process.platform === 'win32')("keeps the last 20 lines of a stdio backend's stderr, each cut at 500 characters, blank ones skipped", async () => {
    const stdio = { name: 's', kind: 'stdio', command: 'never-started' } as unknown as ServerConfig;
    const tail: string[] = [];
    const transport = createSessionTransport(stdio, silentLogger, tail, noStreamLost) as Transport & { stderr: PassThrough };
    transport.stderr.write(`${'x'.repeat(600)}\n\n`);
    transport.stderr.write(Array.from({ length: 25 }, (_, i) => `line ${i}`).join('\n'));
    await until('the last line in the tail', () => tail.at(-1) === 'line 24');
    expect(tail).toHaveLength(20);
    expect(tail[0]).toBe('line 5');
    transport.stderr.end();
    const short: string[] = [];
    const other = createSessionTransport(stdio, silentLogger, short, noStreamLost) as Transport & { stderr: PassThrough };
    other.stderr.write(`${'y'.repeat(600)}\n   \n`);
    await until('the cut line in the tail', () => short.length > 0);
    expect(short).toEqual(['y'.repeat(500)]);
    other.stderr.end();
  });

  it('counts every message the backend sends as traffic, and still delivers it', () => {
    vi.useFakeTimers({ now: 1_000 });
    try {
      const delivered: unknown[] = [];
      const transport = { onmessage: (m: unknown) => delivered.push(m) } as unknown as Transport;
      const traffic = new Traffic();
      vi.setSystemTime(2_000);
      countTraffic(transport, traffic);
      expect(traffic.at).toBe(2_000);
      vi.setSystemTime(3_000);
      transport.onmessage?.({ jsonrpc: '2.0', method: 'notifications/message' });
      expect(traffic.at).toBe(3_000);
      expect(delivered).toEqual([{ jsonrpc: '2.0', method: 'notifications/message' }]);
    } finally {
      vi.useRealTimers();
    }
  });
});
