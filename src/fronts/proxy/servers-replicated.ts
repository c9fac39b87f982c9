/**
 * Several instances: a server `add_server` added on one instance is added on every one (each makes its
 * own connection, as with configured servers), and removed from every one with `remove_server`. The
 * name is taken once cluster-wide, within `maxAdded` for the cluster (cluster/named-entries.ts); the change goes
 * out through the fan-out; an instance that joins later adds what the entries hold. Every addition
 * has an id, so a late message about a name that was removed and added again changes nothing. Each
 * instance checks the server against its own allow-list too: an instance configured more strictly
 * refuses it (and says so in its log).
 */
import { randomUUID } from 'node:crypto';
import type { Fanout } from '../../cluster/fanout.js';
import type { NamedEntries } from '../../cluster/named-entries.js';
import type { Logger } from '../../log.js';
import type { AddServer, ProxyServers } from './servers.js';
import { background } from '../../util/background.js';

export interface ServerReplicationDeps {
  readonly entries: NamedEntries;
  readonly fanout: Fanout;
  readonly instanceId: string;
  readonly logger: Logger;
  /** A server another instance added or removed is now here, or gone (the proxy tools' events). */
  readonly onChange: (change: 'added' | 'removed', name: string) => void;
}

/** What is replicated of an addition. */
interface Addition {
  readonly req: AddServer;
  readonly by: string;
}

/** An addition as written or sent; undefined when it is not one. */
function parseAddition(value: unknown): Addition | undefined {
  let v: Partial<Addition> | null;
  try {
    v = (typeof value === 'string' ? JSON.parse(value) : value) as Partial<Addition> | null;
  } catch {
    return undefined;
  }
  return v && typeof v.by === 'string' && typeof v.req === 'object' && v.req !== null && typeof v.req.name === 'string' ? (v as Addition) : undefined;
}

/** Starts replicating `servers` across the other instances; resolves, once it holds what they added, to the function that stops it. */
export async function replicateServers(servers: ProxyServers, deps: ServerReplicationDeps): Promise<() => Promise<void>> {
  const log = deps.logger.child({ component: 'proxy-servers' });
  const adopt = async (id: string, addition: Addition): Promise<void> => {
    try {
      if (await servers.adopt(addition.req, addition.by, id)) deps.onChange('added', addition.req.name);
    } catch (e) {
      log.warn({ server: addition.req.name, err: (e as Error).message }, 'a server another instance added is not allowed here');
    }
  };
  const drop = async (name: string, id: string): Promise<void> => {
    try {
      if (await servers.drop(name, id)) deps.onChange('removed', name);
    } catch (e) {
      log.warn({ server: name, err: (e as Error).message }, 'a server another instance removed did not close cleanly here');
    }
  };
  const send = (message: Record<string, unknown>): Promise<void> =>
    deps.fanout.publish(message).then(
      () => undefined,
      (e: unknown) => log.warn({ err: (e as Error).message }, 'the other instances could not be told of a server change'),
    );
  const stop = await deps.fanout.listen((m) => {
    if (m['t'] !== 'server' || m['from'] === deps.instanceId || typeof m['name'] !== 'string' || typeof m['id'] !== 'string') return;
    const [name, id] = [m['name'], m['id']];
    if (m['op'] === 'removed') return background('remove a server another instance removed', () => drop(name, id), log);
    const addition = m['op'] === 'added' ? parseAddition(m['addition']) : undefined;
    if (addition?.req.name === name) background('add a server another instance added', () => adopt(id, addition), log);
  });
  try {
    for (const { id, value } of (await deps.entries.all()).values()) {
      const addition = parseAddition(value);
      if (addition) await adopt(id, addition);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const taken = new Map<string, Addition>();
  servers.replicate({
    async take(req, by, maxAdded) {
      const addition: Addition = { req, by };
      const id = randomUUID();
      const r = await deps.entries.add(req.name, { id, value: JSON.stringify(addition) }, maxAdded);
      if (r !== 'added') return { refused: r };
      taken.set(id, addition);
      return { id };
    },
    async added(name, id) {
      const addition = taken.get(id);
      taken.delete(id);
      if (addition) await send({ t: 'server', op: 'added', name, id, addition, from: deps.instanceId });
    },
    async removed(name, id) {
      taken.delete(id);
      await deps.entries.remove(name, id).catch((e: unknown) => log.warn({ err: (e as Error).message }, 'a removed server could not be given up cluster-wide'));
      await send({ t: 'server', op: 'removed', name, id, from: deps.instanceId });
    },
  });
  return stop;
}
