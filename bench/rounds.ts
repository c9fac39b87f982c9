/**
 * Calls that ask for input (`ask`: one elicitation, then the answer).
 *   mrtrRound     one round through every system at concurrency 1 and 16: direct, the peers and the
 *                 gateway's legacy route answer the elicitation in-session (SDK v1 client); `/mcp` runs
 *                 an MRTR round, driven by the SDK v2 client (its elicitation handler answers the
 *                 `input_required`, it retries), with the bare-fetch round beside it as context; and
 *                 the round straight to the backend with a process for each call in flight, as exact
 *                 correlation over stdio needs (context for rounds/s: what that costs without a gateway;
 *                 measured when `--systems` names it).
 *                 And the gateway over the same tools served by a streamable HTTP backend, one session
 *                 for every call (context: where correlation needs no process per call).
 *   clusterRetry  two instances on Redis: the first leg on the owner, the retry on the owner, on the
 *                 other instance (forwarded), or through a bare node:http relay to the owner (the floor
 *                 of any forward: one HTTP hop and nothing else); only the retry is timed.
 */
import { directClient, ELICIT, expectAsked, fetchRound, timedRetry, v1Client, v2Client } from './clients.js';
import { CLUSTER_WARMUP_ROUNDS, REDIS_URL, ROUNDS, ROUNDS_PAIR, ROUNDS_PER_PROCESS_WARMUP, WARMUP, named, wanted } from './options.js';
import type { Fleet } from './fleet.js';
import { BACKEND_HTTP, BACKEND_STDIO, BEST_CONFIG, RELAY, freePort, startGateway, startUrlProcess, type SystemProcess } from './procs.js';
import { measureSustained, measureSystems, type Driven } from './systems.js';
import { runLoad } from './measure.js';

export const ROUND = 'ask (one elicitation round)';
/** The rounds/s target's own figure (options.ts ROUNDS_PAIR): the gateway and the peers alone, alternating turns. */
export const ROUNDS_PAIR_SCENARIO = `${ROUND}, rounds/s pair (the gateway and the peers alone, alternating turns)`;
/**
 * The systems of the rounds/s pair: `/mcp` driven by the SDK v2 client, and the peers (those measured
 * at 16: mcp-proxy cannot elicit); with them, when measured, supergateway with a session per call
 * (context: the target compares with the peers as they are driven everywhere else).
 */
const ROUNDS_PAIR_SYSTEMS = ['gateway-v2', 'mcp-proxy', 'supergateway', 'supergateway, a session per call'] as const;
/**
 * The round straight to the backend with a process for each call in flight (16 at concurrency 16):
 * what exact correlation over stdio costs the backends, without any gateway.
 */
export const DIRECT_PER_CALL = 'direct, a process per call';
/** Processes of `DIRECT_PER_CALL`: one for each call the round figure has in flight at once. */
const PER_CALL_PROCESSES = 16;
/**
 * supergateway with as many clients as calls in flight, each its own session, so its own backend
 * process (supergateway's stateful mode starts one for each session): what a peer's in-session round
 * costs when its calls come from that many clients, as a gateway's do from many users, and not all
 * from one session sharing one process (context for rounds/s, in its pair; measured when `--systems`
 * names it).
 */
export const PEER_PER_SESSION = 'supergateway, a session per call';
/**
 * The gateway's round over the same tools served by a streamable HTTP backend (bench/backend.ts), where a
 * backend's request arrives on the stream of the call it belongs to: one backend process and session
 * serve every call (context for rounds/s: what the gateway does where correlation needs no process per call).
 */
export const HTTP_BACKEND_ROUND = 'gateway-v2 (HTTP backend)';
/**
 * The same with `coalesceMs: 0`: the round goes out at once. Against the default one it shows what the
 * quiet gap costs where the backend's activity cannot be seen (gateway/quiet-gap.ts), as the issue's
 * default-round target asks of stdio backends.
 */
export const HTTP_BACKEND_NO_WAIT = 'gateway-v2 (HTTP backend; coalesceMs 0)';
export const RETRY = 'retry of an ask round (retry alone timed; CPU per round)';
/** The retry through a bare node:http relay to its owner (bench/relay.ts): the floor of any forward. */
export const RELAYED = 'cluster, retry via a bare node:http relay';
/** Rounds each path of the cluster figure warms up with before the next path's turn. */
const WARMUP_TURN = 500;

/**
 * Each system's rounds at concurrency 1 and then 16, recorded under `scenario`. At 1 the systems run
 * alternately, each warmed as the other figures are (a round at 1 costs a system's processes as much
 * as the machine's state: alternating spreads that over all of them). At 16, a sustained load, system
 * by system (bench/systems.ts `measureSustained`): first every backend process serves
 * `ROUNDS_PER_PROCESS_WARMUP` rounds (options.ts: each process's code is optimised on its own), then
 * the system's runs follow with no pause.
 */
export async function measureRounds(systems: Record<string, Driven>, scenario: string, perProcessWarmup = ROUNDS_PER_PROCESS_WARMUP): Promise<void> {
  // Fewer warm-up rounds before the later runs (a round is two calls and more).
  await measureSystems(systems, scenario, { concurrency: 1, total: ROUNDS[1], warmup: Math.ceil(WARMUP / 5), firstWarmup: ROUNDS[1] });
  // Its processes were just brought to their steady state (measureSustained): the first run's own warm-up only warms the client.
  const at16 = { concurrency: 16, total: ROUNDS[16], warmup: Math.ceil(WARMUP / 2), firstWarmup: Math.ceil(ROUNDS[16] / 4) };
  await measureSustained(systems, scenario, at16, perProcessWarmup);
}

/**
 * `count` backend processes, each with its own SDK v1 client over stdio; a call takes a free one for
 * its whole round (as the gateway's exclusive pool hands a process to one call that can be asked).
 */
async function perCallDirect(f: Fleet, count: number): Promise<Driven> {
  const direct: Awaited<ReturnType<typeof directClient>>[] = [];
  for (let i = 0; i < count; i++) {
    const d = await directClient(BACKEND_STDIO);
    f.track(d.client); // closed with the fleet, even when a later one fails to start
    direct.push(d);
  }
  const free = [...direct];
  const ask = { name: 'ask', arguments: {} };
  return {
    client: 'SDK v1 (stdio)',
    call: async () => {
      const d = free.pop();
      if (!d) throw new Error(`more than ${count} rounds at once`);
      try {
        expectAsked(await d.client.callTool(ask, undefined, { timeout: 10_000 }));
      } finally {
        free.push(d);
      }
    },
    watch: { sut: [], backend: direct.map((d) => d.pid) },
    processes: count,
  };
}

/**
 * `count` SDK v1 clients of the peer at `url`, each its own session (and, for supergateway, its own
 * backend process); a call takes a free one for its whole round. `pid`: the peer, whose children are
 * its backends.
 */
async function perSessionPeer(f: Fleet, url: string, pid: number, count: number): Promise<Driven> {
  const clients = [];
  for (let i = 0; i < count; i++) clients.push(f.track(await v1Client(url, ELICIT)));
  const free = [...clients];
  const ask = { name: 'ask', arguments: {} };
  return {
    client: `SDK v1 (${count} sessions)`,
    call: async () => {
      const client = free.pop();
      if (!client) throw new Error(`more than ${count} rounds at once`);
      try {
        expectAsked(await client.callTool(ask, undefined, { timeout: 10_000 }));
      } finally {
        free.push(client);
      }
    },
    watch: { sut: [pid] },
    processes: count,
  };
}

/** A gateway (`gateway` settings over the defaults) in front of the HTTP backend, driven by the SDK v2 client; closed with the fleet. */
async function overHttpBackend(f: Fleet, gateway: Record<string, unknown> = {}): Promise<Driven> {
  const backend = await startUrlProcess(BACKEND_HTTP);
  const gw = await startGateway({ mcpServers: { bench: { url: backend.url } }, gateway }).catch(async (e: unknown) => {
    await backend.stop();
    throw e;
  });
  f.track({ close: async () => void (await Promise.all([gw.stop(), backend.stop()])) });
  const client = f.track(await v2Client(gw.url, ELICIT));
  const ask = { name: 'ask', arguments: {} };
  return {
    client: 'SDK v2',
    call: async () => expectAsked(await client.callTool(ask, { timeout: 10_000 })),
    watch: { sut: [gw.pid], backend: [backend.pid] },
  };
}

async function roundSystems(f: Fleet): Promise<Record<string, Driven>> {
  const clients = {
    proxy: f.track(await v1Client(f.proxy.url, ELICIT)),
    superGw: f.track(await v1Client(f.superGw.url, ELICIT)),
    v1: f.track(await v1Client(f.gw.url, ELICIT)),
    v2: f.track(await v2Client(f.gw.url, ELICIT)),
  };
  const ask = { name: 'ask', arguments: {} };
  const opts = { timeout: 10_000 };
  const gwProcesses = { processes: PER_CALL_PROCESSES, warmedBy: 'gateway' };
  return {
    direct: { client: 'SDK v1 (stdio)', call: async () => expectAsked(await f.direct.client.callTool(ask)), watch: { sut: [], backend: [f.direct.pid] } },
    // Context that a full run leaves out (its processes' warm-up alone took 46 s of one): `--systems` names it.
    ...(named(DIRECT_PER_CALL) ? { [DIRECT_PER_CALL]: { ...(await perCallDirect(f, PER_CALL_PROCESSES)), at: [16] } } : {}),
    ...(named(PEER_PER_SESSION) ? { [PEER_PER_SESSION]: { ...(await perSessionPeer(f, f.superGw.url, f.superGw.pid, PER_CALL_PROCESSES)), at: [16] } } : {}),
    ...(wanted(HTTP_BACKEND_ROUND) ? { [HTTP_BACKEND_ROUND]: await overHttpBackend(f) } : {}),
    // Context at concurrency 1 only (what the quiet gap costs a round's latency; targets.ts).
    ...(wanted(HTTP_BACKEND_NO_WAIT) ? { [HTTP_BACKEND_NO_WAIT]: { ...(await overHttpBackend(f, { coalesceMs: 0 })), at: [1] } } : {}),
    // mcp-proxy 6.x cannot elicit (README Performance): its rounds are errors, shown once, at concurrency 1.
    'mcp-proxy': {
      client: 'SDK v1',
      call: async () => expectAsked(await clients.proxy.callTool(ask, undefined, opts)),
      watch: { sut: [f.proxy.pid] },
      at: [1],
    },
    supergateway: { client: 'SDK v1', call: async () => expectAsked(await clients.superGw.callTool(ask, undefined, opts)), watch: { sut: [f.superGw.pid] } },
    // The default gateway's exclusive pool: a process for each call in flight, the same ones whichever
    // client asks (the same capabilities and principal); its quickest client warms them.
    'gateway-v1': {
      client: 'SDK v1',
      call: async () => expectAsked(await clients.v1.callTool(ask, undefined, opts)),
      watch: { sut: [f.gw.pid] },
      ...gwProcesses,
    },
    'gateway-v2': { client: 'SDK v2', call: async () => expectAsked(await clients.v2.callTool(ask, opts)), watch: { sut: [f.gw.pid] }, ...gwProcesses },
    gateway: { client: 'fetch', call: fetchRound(f.gw.url), watch: { sut: [f.gw.pid] }, ...gwProcesses },
    // The tuned config's round against its pass-through calls, at concurrency 1 (context; targets.ts).
    'gateway-best': { client: 'fetch', call: fetchRound(f.best.url), watch: { sut: [f.best.pid] }, at: [1] },
  };
}

export async function mrtrRound(fleet: Fleet): Promise<void> {
  const systems = await roundSystems(fleet);
  await measureRounds(systems, ROUND);
  // The rounds/s target's own figure: the gateway and the peers alone, alternating turns at 16.
  const pair = Object.fromEntries(
    ROUNDS_PAIR_SYSTEMS.filter((name) => wanted(name) && systems[name] && (systems[name].at?.includes(16) ?? true)).map((name) => [name, systems[name]!]),
  );
  if (!pair['gateway-v2'] || Object.keys(pair).length < 2) return;
  await measureSystems(pair, ROUNDS_PAIR_SCENARIO, {
    concurrency: 16,
    total: ROUNDS_PAIR.rounds,
    warmup: ROUNDS_PAIR.warmup,
    firstWarmup: ROUNDS_PAIR.firstWarmup,
    repeats: ROUNDS_PAIR.runs,
  });
}

/**
 * What a retry costs when it lands on the instance that does not hold its call (two instances on
 * Redis, tuned config; the retry is forwarded to the owner) against a retry on the owner. The first
 * leg always goes to the owner and is not timed; CPU is both instances' per round.
 */
export async function clusterRetry(): Promise<void> {
  const env = {
    LOG_LEVEL: 'warn',
    MCP_GATEWAY_STATE_KEYS: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url'),
    MCP_GATEWAY_CLUSTER_SECRET: Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url'),
  };
  const prefix = `mcpgw-bench:${Date.now()}:`;
  const ports = [await freePort(), await freePort()] as const;
  const config = (instanceId: string, port: number) => ({
    ...BEST_CONFIG,
    gateway: {
      ...BEST_CONFIG.gateway,
      maxParkedPerPrincipal: 4_096,
      maxParkedTotal: 4_096,
      cluster: { redis: REDIS_URL, keyPrefix: prefix, instanceId, internalUrl: `http://127.0.0.1:${port}` },
    },
  });
  const a = await startGateway(config('a', ports[0]), env, [], ports[0]);
  const b = await startGateway(config('b', ports[1]), env, [], ports[1]).catch(async (e: unknown) => {
    await a.stop();
    throw e;
  });
  const watch = { sut: [a.pid, b.pid] };
  let relay: SystemProcess | undefined;
  try {
    relay = await startUrlProcess([...RELAY, a.url]);
    const systems: Record<string, Driven & { call: () => Promise<number> }> = {
      'cluster, retry on owner': { client: 'fetch', call: timedRetry(a.url, a.url), watch },
      'cluster, retry forwarded': { client: 'fetch', call: timedRetry(a.url, b.url), watch },
      [RELAYED]: { client: 'fetch', call: timedRetry(a.url, relay.url), watch: { sut: [a.pid, relay.pid] } },
    };
    // Every path at its steady state first, as in a cluster where each instance takes its share: in
    // turns of 500 rounds, so no instance idles long while another path warms.
    const warming = Object.entries(systems).filter(([name]) => wanted(name));
    const warmFrom = performance.now();
    for (let done = 0; done < CLUSTER_WARMUP_ROUNDS; done += WARMUP_TURN) {
      for (const [name, s] of warming) {
        const turn = await runLoad(s.call, { concurrency: 8, total: Math.min(WARMUP_TURN, CLUSTER_WARMUP_ROUNDS - done), warmup: 0 });
        if (turn.errors > 0) throw new Error(`${name}: ${turn.errors} of its warm-up rounds failed`);
      }
    }
    console.error(`  cluster paths warmed up in ${((performance.now() - warmFrom) / 1000).toFixed(1)} s`);
    // Every path is at its steady state already: no warm-up of its processes again at 16.
    await measureRounds(systems, RETRY, 0);
  } finally {
    await Promise.all([a.stop(), b.stop(), relay?.stop()]);
  }
}
