/**
 * A POST to an authorization server endpoint (token, introspection) ends within its deadline whatever
 * the endpoint does and whatever the collector does: one that sends its answer's head and then nothing
 * held the body read for ever under GC pressure (fetch with `redirect: 'error'` on Node 20.20 stops
 * hearing its signal once the head has come). A redirect is still never followed.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postForm } from '../../src/auth/endpoint-post.js';

const client = { clientId: 'gateway', clientSecret: 'secret-0123456789' };
let server: Server;
let base = '';
/** Requests that followed the redirect. */
let followed = 0;
const open: ServerResponse[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/silent-body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"active":'); // and nothing more
      open.push(res);
    } else if (req.url === '/moved') {
      res.writeHead(307, { location: `${base}/elsewhere` }).end();
    } else {
      followed++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"active":true}');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const res of open) res.destroy();
  await new Promise((r) => server.close(r));
});

/** A full collection, in this process (the flag set now gives a fresh context its `gc`). */
const collect = (): void => {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
};

describe('postForm', () => {
  it('gives up on a body that never comes within its deadline, full collections meanwhile', async () => {
    const collector = setInterval(collect, 50);
    try {
      const started = Date.now();
      const outcome = postForm(`${base}/silent-body`, client, { token: 't' }, 300).then(
        () => 'answered',
        (e: unknown) => (e as Error).message,
      );
      const bound = new Promise<string>((r) => setTimeout(() => r('still waiting after 5 s'), 5_000).unref());
      expect(await Promise.race([outcome, bound])).toBe(`${base}/silent-body: no answer within 300 ms`);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      clearInterval(collector);
    }
  });

  it('refuses a redirect without following it (the secret never goes elsewhere)', async () => {
    await expect(postForm(`${base}/moved`, client, { token: 't' }, 2_000)).rejects.toThrow(/redirect/i);
    expect(followed).toBe(0);
  });
});
