/**
 * Pass-through calls (`echo`) through every system, all in front of the same stdio backend:
 *   direct        the v1 client straight to the backend over stdio (the limit)
 *   http-floor    a bare node:http forwarder (bench/floor.ts), driven by bare fetch: one HTTP hop, nothing else
 *   http-floor-v1, http-floor-v2   the same floor driven by the SDK v1 / v2 client (16 B, concurrency 64):
 *                 a bare forwarder behind the same client as the gateway's rows (context for the throughput target)
 *   mcp-proxy, supergateway   the npm peers with their own CLIs, driven by the SDK v1 client
 *   gateway-v1    the gateway (default config) through its legacy 2025-11-25 session route, SDK v1 client
 *   gateway-v2    the gateway (default config) on `/mcp`, SDK v2 client pinned to 2026-07-28
 *   gateway       the same gateway on `/mcp` with bare fetch (context: no schema checks in the client)
 *   gateway-best  the tuned config with bare fetch (16 B only)
 *   gateway-v2-elicit  SDK v2 declaring elicitation (16 B, concurrency 16 and 64): such a call may be asked
 *                 for input, so over stdio it takes a backend process of its own (at most
 *                 `maxSessionsPerBackend`, 16), where a plain call shares one
 * 16 B at concurrency 1, 16 and 64; 64 KiB at concurrency 16; then the CPU pair: the gateway and the
 * floor alone at 16, in runs of thousands of calls, many times (the CPU target reads their paired ratio). The SDK clients here declare no input
 * capability (the peers' and the gateway's alike); bench/rounds.ts measures the ones that do.
 */
import { ELICIT, rpc, v1Client, v2Client } from './clients.js';
import type { Fleet } from './fleet.js';
import { CLIENT_THREADS, startClientThreads } from './client-threads.js';
import { CALLS, CONTEXT_REPEATS, CPU_PAIR, PAYLOADS, THROUGHPUT_PAIR, WARMUP, wanted } from './options.js';
import { measureSystems, type Driven } from './systems.js';

type Payload = keyof typeof PAYLOADS;
/**
 * The figures: 16 B at each concurrency; 64 KiB once, at 16 (where a large payload shows in both
 * latency and throughput), with a quarter of the calls (each moves 128 KiB; a run still lasts about a
 * second). The last element: untimed calls before each system's first run of the figure. The first two
 * figures bring every system to its steady state (as many as the figure times); by the third each has
 * served thousands of calls, and a quarter of the figure's own warms what is new to it (a concurrency,
 * a payload's size).
 */
const FIGURES: [Payload, 1 | 16 | 64, number, number][] = [
  ['16 B', 1, CALLS[1], CALLS[1]],
  ['16 B', 16, CALLS[16], CALLS[16]],
  ['16 B', 64, CALLS[64], Math.ceil(CALLS[64] / 4)],
  ['64 KiB', 16, Math.ceil(CALLS[16] / 4), Math.ceil(CALLS[16] / 16)],
];
/** Systems measured at some figures only (the others: at every figure). */
const ONLY_AT: Record<string, (label: Payload, concurrency: number) => boolean> = {
  'gateway-best': (label) => label === '16 B',
  'gateway-v2-elicit': (label, c) => label === '16 B' && (c === 16 || c === 64),
  'http-floor-v1': (label, c) => label === '16 B' && c === 64,
  'http-floor-v2': (label, c) => label === '16 B' && c === 64,
};

type EchoSystems = Record<string, Omit<Driven, 'call'> & { call: (text: string) => Promise<void> }>;

async function echoSystems(f: Fleet): Promise<EchoSystems> {
  const clients = {
    proxy: f.track(await v1Client(f.proxy.url)),
    superGw: f.track(await v1Client(f.superGw.url)),
    v1: f.track(await v1Client(f.gw.url)),
    v2: f.track(await v2Client(f.gw.url)),
    v2Elicit: f.track(await v2Client(f.gw.url, ELICIT)),
    floorV1: f.track(await v1Client(f.floor.url)),
    floorV2: f.track(await v2Client(f.floor.url)),
  };
  const echo = (text: string) => ({ name: 'echo', arguments: { text } });
  return {
    direct: { client: 'SDK v1 (stdio)', call: async (t) => void (await f.direct.client.callTool(echo(t))), watch: { sut: [], backend: [f.direct.pid] } },
    'http-floor': { client: 'fetch', call: async (t) => void (await rpc(f.floor.url, 'tools/call', echo(t))), watch: { sut: [f.floor.pid] } },
    'http-floor-v1': { client: 'SDK v1', call: async (t) => void (await clients.floorV1.callTool(echo(t))), watch: { sut: [f.floor.pid] } },
    'http-floor-v2': { client: 'SDK v2', call: async (t) => void (await clients.floorV2.callTool(echo(t))), watch: { sut: [f.floor.pid] } },
    'mcp-proxy': { client: 'SDK v1', call: async (t) => void (await clients.proxy.callTool(echo(t))), watch: { sut: [f.proxy.pid] } },
    supergateway: { client: 'SDK v1', call: async (t) => void (await clients.superGw.callTool(echo(t))), watch: { sut: [f.superGw.pid] } },
    'gateway-v1': { client: 'SDK v1', call: async (t) => void (await clients.v1.callTool(echo(t))), watch: { sut: [f.gw.pid] } },
    'gateway-v2': { client: 'SDK v2', call: async (t) => void (await clients.v2.callTool(echo(t))), watch: { sut: [f.gw.pid] } },
    'gateway-v2-elicit': {
      client: 'SDK v2, declares elicitation',
      call: async (t) => void (await clients.v2Elicit.callTool(echo(t))),
      watch: { sut: [f.gw.pid] },
    },
    gateway: { client: 'fetch', call: async (t) => void (await rpc(f.gw.url, 'tools/call', echo(t))), watch: { sut: [f.gw.pid] } },
    'gateway-best': { client: 'fetch', call: async (t) => void (await rpc(f.best.url, 'tools/call', echo(t))), watch: { sut: [f.best.pid] } },
  };
}

export async function passThrough(fleet: Fleet): Promise<void> {
  const systems = await echoSystems(fleet);
  for (const [label, concurrency, total, firstWarmup] of FIGURES) {
    const names = Object.keys(systems).filter((name) => ONLY_AT[name]?.(label, concurrency) ?? true);
    await measureSystems(sending(systems, names, PAYLOADS[label]), `echo ${label}`, {
      concurrency,
      total,
      warmup: WARMUP,
      firstWarmup,
      repeats: CONTEXT_REPEATS,
    });
  }
  // The throughput target's own figure: the SDK-driven gateway rows, the peers and the floor behind the
  // same clients alone, many turns, each driven by clients on threads of their own.
  await measureSystems(await threadedPair(fleet), THROUGHPUT_PAIR_SCENARIO, {
    concurrency: 64,
    total: THROUGHPUT_PAIR.calls,
    warmup: WARMUP,
    // Its client threads are new: their SDK client code warms up (the systems served thousands of calls before).
    firstWarmup: THROUGHPUT_PAIR.firstWarmup,
    repeats: THROUGHPUT_PAIR.runs,
  });
  // The CPU target's own figure: the gateway and the floor alone, in longer runs, many pairs.
  await measureSystems(sending(systems, ['http-floor', 'gateway'], PAYLOADS['16 B']), CPU_PAIR_SCENARIO, {
    concurrency: 16,
    total: CPU_PAIR.calls,
    warmup: WARMUP,
    firstWarmup: CPU_PAIR.calls,
    repeats: CPU_PAIR.runs,
  });
}

/** The systems `names`, each call sending `text`. */
function sending(systems: EchoSystems, names: readonly string[], text: string): Record<string, Driven> {
  return Object.fromEntries(names.map((name) => [name, { ...systems[name]!, call: () => systems[name]!.call(text) }]));
}

/** The scenario the throughput target pairs the SDK-driven gateway rows with the peers under. */
export const THROUGHPUT_PAIR_SCENARIO = `echo 16 B, throughput pair (SDK-driven gateway rows, peers and floor alone, many turns; ${CLIENT_THREADS} client threads each)`;

/**
 * The throughput pair's systems, each driven by SDK clients on `CLIENT_THREADS` threads of their own
 * (client-threads.ts): on the bench's one main thread the v2 client's own CPU had bounded the gateway
 * behind it, where the peers, whose own CPU a call is three times the gateway's, were not bound by theirs.
 */
async function threadedPair(f: Fleet): Promise<Record<string, Driven>> {
  const text = PAYLOADS['16 B'];
  const threads = async (kind: 'v1' | 'v2', url: string) => f.track(await startClientThreads(kind, url, text));
  const by = (kind: 'v1' | 'v2'): string => `SDK ${kind} (${CLIENT_THREADS} threads)`;
  const systems: Record<string, Driven> = {};
  const add = async (name: string, kind: 'v1' | 'v2', url: string, pid: number): Promise<void> => {
    if (wanted(name)) systems[name] = { client: by(kind), load: await threads(kind, url), watch: { sut: [pid] } };
  };
  await add('gateway-v2', 'v2', f.gw.url, f.gw.pid);
  await add('gateway-v1', 'v1', f.gw.url, f.gw.pid);
  await add('mcp-proxy', 'v1', f.proxy.url, f.proxy.pid);
  await add('supergateway', 'v1', f.superGw.url, f.superGw.pid);
  await add('http-floor-v2', 'v2', f.floor.url, f.floor.pid);
  await add('http-floor-v1', 'v1', f.floor.url, f.floor.pid);
  return systems;
}

/** The scenario the gateway's and the floor's CPU per call are paired under (the CPU target). */
export const CPU_PAIR_SCENARIO = 'echo 16 B, CPU pair (gateway and floor alone, long runs)';
