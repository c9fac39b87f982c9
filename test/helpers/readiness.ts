/**
 * `/readyz` of a gateway (Node or edge): what it answers, one backend's state in it, and a gateway in
 * front of one 2026-07-28 server named `modern` that answered, goes away and comes back on the same
 * port: up, then down (503) with no request in between, then up.
 */
import { expect } from 'vitest';

interface Server {
  close(): Promise<void>;
}

/** What `/readyz` at `base` answers: its status and body. */
export async function readyz(base: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(new URL('/readyz', base));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The state `/readyz` at `base` gives the backend `name` (undefined when it lists none of that name). */
export async function backendState(base: string, name: string): Promise<string | undefined> {
  const body = (await readyz(base)).body as { backends: { name: string; state: string }[] };
  return body.backends.find((b) => b.name === name)?.state;
}

/**
 * Checks `/readyz` at `base` through `server`'s outage: `answered` makes a first request through the
 * gateway, `server` is closed, `restart` brings it back on its port. The server running at the end
 * (the caller closes it).
 */
export async function readyzThroughOutage<S extends Server>(base: string, answered: () => Promise<void>, server: S, restart: () => Promise<S>): Promise<S> {
  await answered();
  expect(await readyz(base)).toMatchObject({ status: 200, body: { status: 'ready', backends: [{ name: 'modern', state: 'up' }] } });
  await server.close();
  // No request reached it since: /readyz itself finds it gone.
  expect(await readyz(base)).toMatchObject({ status: 503, body: { status: 'unavailable', backends: [{ name: 'modern', state: 'down' }] } });
  const back = await restart();
  expect(await readyz(base)).toMatchObject({ status: 200, body: { status: 'ready', backends: [{ name: 'modern', state: 'up' }] } });
  return back;
}
