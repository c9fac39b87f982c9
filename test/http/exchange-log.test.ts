/** The per-exchange log line says why a request failed: the error's message and reason, and what caused it. */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors.js';
import { logExchange } from '../../src/http/exchange-log.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { until } from '../helpers/until.js';

function recorder(): { lines: { level: string; obj: Record<string, unknown> }[]; log: Logger } {
  const lines: { level: string; obj: Record<string, unknown> }[] = [];
  const at = (level: string) => (obj: object) => void lines.push({ level, obj: obj as Record<string, unknown> });
  const log: Logger = { ...silentLogger, info: at('info'), warn: at('warn'), child: () => log };
  return { lines, log };
}

async function lineFor(
  work: Promise<Record<string, unknown>>,
  aborted = false,
  request: { method: string; params: Record<string, unknown> } = { method: 'tools/call', params: { name: 'echo' } },
): Promise<{ level: string; obj: Record<string, unknown> }> {
  const { lines, log } = recorder();
  const controller = new AbortController();
  if (aborted) controller.abort();
  logExchange(log, request as never, 'alice', work, {
    started: performance.now(),
    signal: controller.signal,
    done: () => undefined,
  });
  await until('the exchange line', () => lines.length > 0);
  return lines[0]!;
}

describe('the exchange line', () => {
  it("carries a gateway error's message, reason and the causes under it (a backend's connect error)", async () => {
    const refused = new Error('connect ECONNREFUSED 127.0.0.1:9');
    const failed = new GatewayError('backend_unavailable', 'web', { cause: new TypeError('fetch failed', { cause: refused }) });
    const { level, obj } = await lineFor(Promise.reject(failed));
    expect(level).toBe('info');
    expect(obj).toMatchObject({
      method: 'tools/call',
      name: 'echo',
      principal: 'alice',
      code: -32603,
      reason: 'backend_unavailable',
      cause: 'fetch failed: connect ECONNREFUSED 127.0.0.1:9',
    });
    expect(obj['error']).toBe(failed.message);
    expect(String(obj['error'])).toContain('web');
  });

  it('says a cause once when the error over it repeats its words (a start failure around its spawn error)', async () => {
    const spawn = new Error('spawn /nonexistent/mcp-x ENOENT');
    const failed = new GatewayError('backend_unavailable', 'missing', { cause: new Error(spawn.message, { cause: spawn }) });
    const { obj } = await lineFor(Promise.reject(failed));
    expect(obj['cause']).toBe('spawn /nonexistent/mcp-x ENOENT');
  });

  it("logs a deadline's DOMException that reached the client as unexpected (warn, -32603), not as a JSON-RPC error with its DOM code", async () => {
    const { level, obj } = await lineFor(Promise.reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError')));
    expect(level).toBe('warn');
    expect(obj).toMatchObject({ code: -32603, err: 'The operation was aborted due to timeout' });
  });

  it("carries a backend's wire error message, clipped, and no cause when there is none", async () => {
    const wire = Object.assign(new Error(`MCP error -32602: Invalid arguments ${'x'.repeat(400)}`), { code: -32602 });
    const { obj } = await lineFor(Promise.reject(wire));
    expect(obj).toMatchObject({ code: -32602 });
    expect(String(obj['error']).startsWith('Invalid arguments')).toBe(true);
    expect(String(obj['error']).length).toBeLessThanOrEqual(301);
    expect(obj).not.toHaveProperty('cause');
  });

  it("never logs the values of a URI's query (a caller's token), as its name or in an error that quotes it", async () => {
    const uri = 'demo://readme?token=SECRETQ2&page=2#frag';
    const read = { method: 'resources/read', params: { uri } };
    const ok = await lineFor(Promise.resolve({ resultType: 'complete' }), false, read);
    expect(ok.obj['name']).toBe('demo://readme?token=…&page=…');
    const failed = await lineFor(Promise.reject(Object.assign(new Error(`Resource ${uri} not found`), { code: -32002 })), false, read);
    expect(JSON.stringify(failed.obj)).not.toContain('SECRETQ2');
    expect(failed.obj['error']).toBe('Resource demo://readme?token=…&page=… not found');
  });

  it('logs an unexpected error at warn with its message, and a client that went away as client_gone', async () => {
    expect(await lineFor(Promise.reject(new Error('boom', { cause: new Error('deeper') })))).toMatchObject({
      level: 'warn',
      obj: { code: -32603, err: 'boom', cause: 'deeper' },
    });
    const gone = await lineFor(Promise.reject(new Error('aborted')), true);
    expect(gone.obj).toMatchObject({ reason: 'client_gone' });
    expect(gone.obj).not.toHaveProperty('error');
  });
});
