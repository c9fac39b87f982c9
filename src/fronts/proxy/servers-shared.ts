/**
 * Several instances: a server `add_server` added on one instance is added on every one (each makes its
 * own connection, as with configured servers), and removed from every one with `remove_server`. The
 * name is taken once cluster-wide (shared entries); the change goes out through the fan-out; an
 * instance that joins later adds what the entries hold. Each instance checks the server against its
 * own allow-list too, so an instance configured more strictly refuses it (and says so in its log).
 */
import type { Fanout, FanoutMessage } from '../../cluster/fanout.js';
import type { SharedEntries } from '../../cluster/shared-entries.js';
import type { Logger } from '../../log.js';
import type { AddServer, ProxyServers } from './servers.js';

export interface ServerSharingDeps {
  readonly entries: SharedEntries;
  readonly fanout: Fanout;
  readonly instanceId: string;
  readonly logger: Logger;
  /** A server another instance added or removed is now here, or gone (the proxy tools' events). */
  readonly onChange: (change: 'added' | 'removed', name: string) => void;
}

interface Shared {
  readonly req: AddServer;
  readonly by: string;
}

/** A shared server as written (JSON) or sent; undefined when it is not one. */
function parseShared(value: unknown): Shared | undefined {
  let v: Partial<Shared> | null;
  try {
    v = (typeof value === 'string' ? JSON.parse(value) : value) as Partial<Shared> | null;
  } catch {
    return undefined;
  }
  return v && typeof v.by === 'string' && typeof v.req === 'object' && v.req !== null && typeof v.req.name === 'string' ? (v as Shared) : undefined;
}

/** Starts sharing `servers` with the other instances; resolves, once it holds what they added, to the function that stops it. */
export async function shareServers(servers: ProxyServers, deps: ServerSharingDeps): Promise<() => Promise<void>> {
  const log = deps.logger.child({ component: 'proxy-servers' });
  const adopt = async (shared: Shared): Promise<void> => {
    if (servers.get(shared.req.name)) return;
    try {
      await servers.adopt(shared.req, shared.by);
      deps.onChange('added', shared.req.name);
    } catch (e) {
      log.warn({ server: shared.req.name, err: (e as Error).message }, 'a server another instance added is not allowed here');
    }
  };
  const send = (message: FanoutMessage): Promise<void> =>
    deps.fanout.publish(message).then(
      () => undefined,
      (e: unknown) => log.warn({ err: (e as Error).message }, 'the other instances could not be told of a server change'),
    );
  const stop = await deps.fanout.listen((m) => {
    if (m['t'] !== 'server' || m['from'] === deps.instanceId || typeof m['name'] !== 'string') return;
    const name = m['name'];
    if (m['op'] === 'removed') {
      if (servers.get(name)?.source === 'added') void servers.drop(name).then(() => deps.onChange('removed', name));
      return;
    }
    const shared = m['op'] === 'added' ? parseShared(m['shared']) : undefined;
    if (shared?.req.name === name) void adopt(shared);
  });
  try {
    for (const value of (await deps.entries.all()).values()) {
      const shared = parseShared(value);
      if (shared) await adopt(shared);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const claimed = new Map<string, Shared>();
  servers.share({
    async claim(req, by) {
      const shared: Shared = { req, by };
      if (!(await deps.entries.add(req.name, JSON.stringify(shared)))) return false;
      claimed.set(req.name, shared);
      return true;
    },
    async added(name) {
      const shared = claimed.get(name);
      claimed.delete(name);
      if (shared) await send({ t: 'server', op: 'added', name, shared, from: deps.instanceId });
    },
    async removed(name) {
      await deps.entries.remove(name).catch((e: unknown) => log.warn({ err: (e as Error).message }, 'a removed server could not be given up cluster-wide'));
      await send({ t: 'server', op: 'removed', name, from: deps.instanceId });
    },
  });
  return stop;
}
