/**
 * The backend fetch has no idle timeout of its own: a response stream that stays silent (a parked
 * call's, while its client answers) is read to its end; with a timeout set, the same stream breaks,
 * which shows the dispatcher is the one that decides.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendFetch } from '../../../src/core/backend/backend-fetch.js';

let server: Server;
let url: string;
/** Ends the silent responses still open. */
const open = new Set<() => void>();

beforeAll(async () => {
  // An SSE answer: one event, silence for `?quietMs`, then a last event and the end.
  server = createServer((req, res) => {
    const quietMs = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('quietMs'));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: first\n\n');
    const timer = setTimeout(() => res.end('data: last\n\n'), quietMs);
    const end = (): void => {
      clearTimeout(timer);
      res.destroy();
    };
    open.add(end);
    res.on('close', () => open.delete(end));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  for (const end of open) end();
  await new Promise((r) => server.close(r));
});

async function readAll(res: Response): Promise<string> {
  return await new Response(res.body).text();
}

describe('backend fetch', () => {
  it('reads a response stream that is silent longer than a body timeout would allow', async () => {
    const res = await createBackendFetch()(`${url}?quietMs=1500`, { signal: AbortSignal.timeout(10_000) });
    expect(await readAll(res)).toBe('data: first\n\ndata: last\n\n');
  });

  it('breaks the same stream when an idle timeout is set (the dispatcher decides, not the caller)', async () => {
    const res = await createBackendFetch(300)(`${url}?quietMs=1500`, { signal: AbortSignal.timeout(10_000) });
    await expect(readAll(res)).rejects.toThrow();
  });

  it('still ends with the caller signal', async () => {
    const ctl = new AbortController();
    const res = await createBackendFetch()(`${url}?quietMs=60000`, { signal: ctl.signal });
    const reading = readAll(res);
    ctl.abort(new Error('client gone'));
    await expect(reading).rejects.toThrow();
  });
});
