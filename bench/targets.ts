/**
 * The targets of issue 30, each computed from the recorded rows with its measured value and met /
 * missed, and the context figures printed beside them (bare-fetch and tuned-config ratios, observing,
 * stdio parked calls).
 */
import type { ObserveFigures } from './observe.js';
import type { ParkedFigures } from './parked.js';
import { cpus } from 'node:os';
import { backendCpu, clientCpu, cpu, find, p50, pairedCpuSpread, pairedRpsRatio, pairedRpsSpread, rps, type MemoryPoint, type Target } from './report.js';
import type { Spread } from './measure.js';
import { DIRECT_PER_CALL, HTTP_BACKEND_NO_WAIT, HTTP_BACKEND_ROUND, PEER_PER_SESSION, RELAYED, RETRY, ROUND, ROUNDS_PAIR_SCENARIO } from './rounds.js';
import { CLIENT_THREADS } from './client-threads.js';
import { CPU_PAIR, REPEATS, ROUNDS_PAIR, THROUGHPUT_PAIR } from './options.js';
import { CPU_PAIR_SCENARIO, THROUGHPUT_PAIR_SCENARIO } from './pass-through.js';
import { CORE_ROW, EDGE_ROUND, EDGE_ROW } from './edge.js';

const ECHO = 'echo 16 B';
const PEERS = ['mcp-proxy', 'supergateway'] as const;
/**
 * The peers that serve a scenario: any that answered, and for the elicitation round only those that
 * failed at most 1% of their rounds. One that cannot elicit is no peer for it (mcp-proxy 6.x: it
 * initialises its backend with no capabilities, so `ask` is refused).
 */
const serving = (scenario: string, c: number): string[] =>
  PEERS.filter((p) => {
    const row = find(p, scenario, c);
    return row !== undefined && row.calls > 0 && (!scenario.startsWith(ROUND) || row.errors <= 0.01 * (row.calls + row.errors));
  });
/** The best peer's figure; NaN (not measured) when no peer served the scenario. */
const best = (values: number[], pick: (...xs: number[]) => number): number => (values.length === 0 ? NaN : pick(...values));
const bestPeerRps = (scenario: string, c: number): number =>
  best(
    serving(scenario, c).map((p) => rps(p, scenario, c)),
    Math.max,
  );
const bestPeerP50 = (scenario: string, c: number): number =>
  best(
    serving(scenario, c).map((p) => p50(p, scenario, c)),
    Math.min,
  );
/** Which peer is the best at `scenario` (for the table). */
const bestPeerName = (scenario: string, c: number, by: 'p50' | 'rps'): string => {
  const peers = serving(scenario, c);
  const value = (p: string): number => (by === 'p50' ? -p50(p, scenario, c) : rps(p, scenario, c));
  return peers.sort((a, b) => value(b) - value(a))[0] ?? 'none';
};
const x = (v: number): string => (Number.isNaN(v) ? '–' : `${v.toFixed(2)}×`);
/** A paired figure's turns, lowest to highest: how far one turn reads from another on this machine. */
const turns = (s: Spread): string => `turns ${x(s.min)} to ${x(s.max)}`;
const lastOf = (points: readonly MemoryPoint[], kind: MemoryPoint['backend']): MemoryPoint | undefined => points.filter((p) => p.backend === kind).at(-1);

/**
 * Rounds per second a system could reach here if the gateway itself cost no CPU, at the CPU per round
 * the same figure measured: every core busy with the client (the bench process, on the same cores)
 * and the backend processes; and no more than the client's one thread can make (the client library
 * runs on the bench's main thread). A rounds/s against a peer above this one's ratio is out of any
 * gateway's reach here.
 */
const reachRps = (system: string, scenario: string, c: number): number => {
  const client = clientCpu(system, scenario, c);
  return Math.min((cpus().length * 1000) / (client + backendCpu(system, scenario, c)), 1000 / client);
};
const reachShown = (v: number): string => `a gateway that cost no CPU: ${x(v)} here`;

/**
 * Like for like: both SDK-driven gateway rows against the best peer (SDK v1); the lower one is judged.
 * Each is the median of its runs' ratios to the best peer of the same turn, in the throughput pair
 * (the rows, the peers and the floor alone, THROUGHPUT_PAIR.runs turns, every system driven by
 * clients on threads of their own). Beside each, as context, the bare floor (bench/floor.ts) driven by
 * the same clients in the same turns: a bare forwarder behind that client, not a bound (its stdio side
 * is the SDK v1 client, which checks each result with zod; the gateway's own stdio leg does not), so
 * no reach is claimed.
 */
function throughputTarget(): Target {
  const v2s = pairedRpsSpread('gateway-v2', PEERS, THROUGHPUT_PAIR_SCENARIO, 64);
  const v1s = pairedRpsSpread('gateway-v1', PEERS, THROUGHPUT_PAIR_SCENARIO, 64);
  const [v2, v1] = [v2s.median, v1s.median];
  const floor = {
    v2: pairedRpsRatio('http-floor-v2', PEERS, THROUGHPUT_PAIR_SCENARIO, 64),
    v1: pairedRpsRatio('http-floor-v1', PEERS, THROUGHPUT_PAIR_SCENARIO, 64),
  };
  const floorShown = (v: number): string => `the bare floor behind the same clients: ${x(v)}`;
  return {
    target: `like-for-like throughput at concurrency 64 (16 B) ≥ 1.5× the best peer (SDK clients on every side, on ${CLIENT_THREADS} threads of their own; the lower of the two gateway rows; the median of ${THROUGHPUT_PAIR.runs} turns' ratios to the best peer of the turn)`,
    value: Math.min(v1, v2),
    shown: `${x(v2)} (SDK v2, /mcp; ${turns(v2s)}; ${floorShown(floor.v2)}); ${x(v1)} (SDK v1, legacy route; ${turns(v1s)}; ${floorShown(floor.v1)})`,
    limit: 1.5,
    atLeast: true,
  };
}

function roundTargets(): Target[] {
  const round = p50('gateway-v2', ROUND, 1) / bestPeerP50(ROUND, 1);
  // Judged on its own figure: the gateway and the peers alone, alternating turns (options.ts ROUNDS_PAIR).
  const PAIR = ROUNDS_PAIR_SCENARIO;
  const perSecTurns = pairedRpsSpread('gateway-v2', serving(PAIR, 16), PAIR, 16);
  const perSec = perSecTurns.median;
  const peer = bestPeerName(PAIR, 16, 'rps');
  const perSecReach = reachRps('gateway-v2', PAIR, 16) / bestPeerRps(PAIR, 16);
  return [
    {
      target: "default MRTR round p50 at concurrency 1 ≤ 1.5× the best peer's in-session elicitation round (gateway-v2)",
      value: round,
      shown: `${x(round)} (${p50('gateway-v2', ROUND, 1).toFixed(2)} against ${bestPeerName(ROUND, 1, 'p50')}'s ${bestPeerP50(ROUND, 1).toFixed(2)} ms)`,
      limit: 1.5,
    },
    {
      target: `MRTR rounds/s at concurrency 16 ≥ the best peer's in-session elicitations/s (gateway-v2; the median of ${ROUNDS_PAIR.runs} alternating turns' ratios to the best peer of the turn)`,
      value: perSec,
      shown: `${x(perSec)} (${turns(perSecTurns)}; medians ${rps('gateway-v2', PAIR, 16).toFixed(0)} against ${peer}'s ${bestPeerRps(PAIR, 16).toFixed(0)}/s; backend ${backendCpu('gateway-v2', PAIR, 16).toFixed(2)} against ${backendCpu(peer, PAIR, 16).toFixed(2)} ms of CPU a round; ${reachShown(perSecReach)})`,
      limit: 1,
      atLeast: true,
      reach: perSecReach,
    },
  ];
}

export function targetsOf(m: { sealOpenUs: number; memory: ParkedFigures }): Target[] {
  const gwCpu = cpu('gateway', CPU_PAIR_SCENARIO, 16);
  const floorCpu = cpu('http-floor', CPU_PAIR_SCENARIO, 16);
  const cpuTurns = pairedCpuSpread('gateway', 'http-floor', CPU_PAIR_SCENARIO, 16);
  const cpuRatio = cpuTurns.median;
  const http = lastOf(m.memory.points, 'HTTP');
  const owner = p50('cluster, retry on owner', RETRY, 1);
  const forwarded = p50('cluster, retry forwarded', RETRY, 1) / owner;
  const relayed = p50(RELAYED, RETRY, 1) / owner;
  return [
    throughputTarget(),
    ...roundTargets(),
    {
      target: `gateway CPU per pass-through call ≤ 2× the floor's (process CPU, 16 B, concurrency 16, both driven by bare fetch; the median of ${CPU_PAIR.runs} paired runs of ${CPU_PAIR.calls} calls)`,
      value: cpuRatio,
      shown: `${x(cpuRatio)} (${turns(cpuTurns)}; medians ${gwCpu.toFixed(3)} against ${floorCpu.toFixed(3)} ms)`,
      limit: 2,
    },
    {
      target: `≤ 16 KiB heap per parked call (HTTP backend, ${http?.parked ?? 0} parked)`,
      value: (http?.heapPerCallBytes ?? NaN) / 1024,
      shown: `${((http?.heapPerCallBytes ?? NaN) / 1024).toFixed(1)} KiB`,
      limit: 16,
    },
    {
      target: 'forwarded retry ≤ 1.2× a retry on its owner (p50 of the retry alone, concurrency 1)',
      value: forwarded,
      shown: `${x(forwarded)} (${p50('cluster, retry forwarded', RETRY, 1).toFixed(2)} against ${owner.toFixed(2)} ms; through a bare node:http relay to the owner: ${x(relayed)})`,
      limit: 1.2,
      reach: relayed,
    },
    { target: 'seal + open ≤ 50 µs', value: m.sealOpenUs, shown: `${m.sealOpenUs.toFixed(1)} µs`, limit: 50 },
  ];
}

function passThroughContext(): [string, string][] {
  const ms = (v: number): string => `${v.toFixed(2)} ms`;
  return [
    ['HTTP hop floor (bare node:http + stdio forwarder), p50 over direct at conc. 1', ms(p50('http-floor', ECHO, 1) - p50('direct', ECHO, 1))],
    ['gateway (bare fetch) p50 over that floor at conc. 1', ms(p50('gateway', ECHO, 1) - p50('http-floor', ECHO, 1))],
    [
      'gateway-v2 / gateway-v1 p50 over the best peer at conc. 1',
      `${ms(p50('gateway-v2', ECHO, 1) - bestPeerP50(ECHO, 1))} / ${ms(p50('gateway-v1', ECHO, 1) - bestPeerP50(ECHO, 1))}`,
    ],
    [
      'throughput at conc. 64 against the best peer, bare fetch (gateway / gateway-best): not like for like',
      `${x(rps('gateway', ECHO, 64) / bestPeerRps(ECHO, 64))} / ${x(rps('gateway-best', ECHO, 64) / bestPeerRps(ECHO, 64))}`,
    ],
    [
      'throughput at conc. 64 against the best peer, SDK v2 declaring elicitation (gateway-v2-elicit: one stdio process per call, 16 at most)',
      x(rps('gateway-v2-elicit', ECHO, 64) / bestPeerRps(ECHO, 64)),
    ],
    ['gateway (bare fetch) throughput at conc. 64 against the floor', x(rps('gateway', ECHO, 64) / rps('http-floor', ECHO, 64))],
    [
      `throughput at conc. 64 against the best peer in the figure of every system (medians of ${REPEATS} runs each), SDK v2 (/mcp) / SDK v1 (legacy route)`,
      `${x(rps('gateway-v2', ECHO, 64) / bestPeerRps(ECHO, 64))} / ${x(rps('gateway-v1', ECHO, 64) / bestPeerRps(ECHO, 64))}`,
    ],
    [
      'gateway throughput at conc. 64 against the floor driven by the same SDK client, v2 (/mcp) / v1 (legacy route)',
      `${x(rps('gateway-v2', ECHO, 64) / rps('http-floor-v2', ECHO, 64))} / ${x(rps('gateway-v1', ECHO, 64) / rps('http-floor-v1', ECHO, 64))}`,
    ],
    [
      'gateway CPU per call at conc. 16 against the floor, driven by SDK v2 / SDK v1',
      `${x(cpu('gateway-v2', ECHO, 16) / cpu('http-floor', ECHO, 16))} / ${x(cpu('gateway-v1', ECHO, 16) / cpu('http-floor', ECHO, 16))}`,
    ],
    ["best peer's CPU per call at conc. 16 against the floor", x(Math.min(...PEERS.map((p) => cpu(p, ECHO, 16))) / cpu('http-floor', ECHO, 16))],
  ];
}

export function contextRows(m: { memory: ParkedFigures; observe?: ObserveFigures }): [string, string][] {
  const rows = passThroughContext();
  rows.push([
    'MRTR round, tuned config (gateway-best, bare fetch) against two pass-through calls (same config), p50 at conc. 1',
    x(p50('gateway-best', ROUND, 1) / (2 * p50('gateway-best', ECHO, 1))),
  ]);
  rows.push([
    // Where a round's time goes at 16: a round is two calls, each through a backend process of its own (16 on 2 cores).
    'MRTR round (gateway-v2) against two pass-through calls through a backend process each (gateway-v2-elicit) / through the shared one (gateway-v2), p50 at conc. 16',
    `${x(p50('gateway-v2', ROUND, 16) / (2 * p50('gateway-v2-elicit', ECHO, 16)))} / ${x(p50('gateway-v2', ROUND, 16) / (2 * p50('gateway-v2', ECHO, 16)))}`,
  ]);
  if (find(DIRECT_PER_CALL, ROUND, 16))
    rows.push([
      // What a process per call costs the backends alone: the same rounds with no gateway and no HTTP.
      `the round straight to the backend (SDK v1 over stdio) at conc. 16, a process per call (${DIRECT_PER_CALL}) against one process for all (direct): rounds/s; backend CPU a round`,
      `${x(rps(DIRECT_PER_CALL, ROUND, 16) / rps('direct', ROUND, 16))} (${rps(DIRECT_PER_CALL, ROUND, 16).toFixed(0)} against ${rps('direct', ROUND, 16).toFixed(0)}/s); ${backendCpu(DIRECT_PER_CALL, ROUND, 16).toFixed(2)} against ${backendCpu('direct', ROUND, 16).toFixed(2)} ms`,
    ]);
  if (find(PEER_PER_SESSION, ROUNDS_PAIR_SCENARIO, 16)) {
    // The same pair against a peer whose 16 calls come from 16 sessions: a backend process each, as the gateway's.
    const perSession = pairedRpsRatio('gateway-v2', [PEER_PER_SESSION], ROUNDS_PAIR_SCENARIO, 16);
    rows.push([
      `MRTR rounds/s at conc. 16 (gateway-v2) against supergateway with a session per call (${PEER_PER_SESSION}: 16 SDK v1 clients, a backend process each), the median of the rounds/s pair's turn ratios; backend CPU a round`,
      `${x(perSession)} (medians ${rps('gateway-v2', ROUNDS_PAIR_SCENARIO, 16).toFixed(0)} against ${rps(PEER_PER_SESSION, ROUNDS_PAIR_SCENARIO, 16).toFixed(0)}/s); ${backendCpu('gateway-v2', ROUNDS_PAIR_SCENARIO, 16).toFixed(2)} against ${backendCpu(PEER_PER_SESSION, ROUNDS_PAIR_SCENARIO, 16).toFixed(2)} ms`,
    ]);
  }
  rows.push([
    // The figure of every system: each system's runs at 16 back to back, one system after another (the machine may drift between them).
    `MRTR rounds/s at conc. 16 against the best peer in the figure of every system (sustained, system by system, medians of ${REPEATS} runs each), gateway-v2 / gateway-v1 (legacy route)`,
    `${x(rps('gateway-v2', ROUND, 16) / bestPeerRps(ROUND, 16))} / ${x(rps('gateway-v1', ROUND, 16) / bestPeerRps(ROUND, 16))}`,
  ]);
  rows.push([
    // Where a backend's requests say which call they belong to (streamable HTTP), one session serves every call.
    `MRTR round (SDK v2) over an HTTP backend (${HTTP_BACKEND_ROUND}: one backend session for every call) against the best peer's in-session round over stdio, at conc. 16: rounds/s; backend CPU a round`,
    `${x(rps(HTTP_BACKEND_ROUND, ROUND, 16) / bestPeerRps(ROUND, 16))} (${rps(HTTP_BACKEND_ROUND, ROUND, 16).toFixed(0)} against ${bestPeerRps(ROUND, 16).toFixed(0)}/s); ${backendCpu(HTTP_BACKEND_ROUND, ROUND, 16).toFixed(2)} against ${backendCpu(bestPeerName(ROUND, 16, 'rps'), ROUND, 16).toFixed(2)} ms`,
  ]);
  rows.push([
    // The default round where the backend's activity cannot be seen waits for a quiet gap (gateway/quiet-gap.ts).
    `default MRTR round over an HTTP backend against the same with coalesceMs 0 (${HTTP_BACKEND_NO_WAIT}), p50 at conc. 1; gateway CPU a round`,
    `${x(p50(HTTP_BACKEND_ROUND, ROUND, 1) / p50(HTTP_BACKEND_NO_WAIT, ROUND, 1))} (${p50(HTTP_BACKEND_ROUND, ROUND, 1).toFixed(2)} against ${p50(HTTP_BACKEND_NO_WAIT, ROUND, 1).toFixed(2)} ms); ${cpu(HTTP_BACKEND_ROUND, ROUND, 1).toFixed(2)} against ${cpu(HTTP_BACKEND_NO_WAIT, ROUND, 1).toFixed(2)} ms`,
  ]);
  rows.push([
    "gateway's legacy route (in-session elicitation, SDK v1) against the best peer's round, p50 at conc. 1",
    x(p50('gateway-v1', ROUND, 1) / bestPeerP50(ROUND, 1)),
  ]);
  rows.push([
    'MRTR round through the edge handler (workerd) + core against straight to the core, p50 at conc. 1 / rounds/s at conc. 16',
    `${x(p50(EDGE_ROW, EDGE_ROUND, 1) / p50(CORE_ROW, EDGE_ROUND, 1))} (${p50(EDGE_ROW, EDGE_ROUND, 1).toFixed(2)} against ${p50(CORE_ROW, EDGE_ROUND, 1).toFixed(2)} ms) / ${x(rps(EDGE_ROW, EDGE_ROUND, 16) / rps(CORE_ROW, EDGE_ROUND, 16))}`,
  ]);
  const http = lastOf(m.memory.points, 'HTTP');
  if (http)
    rows.push([`gateway RSS with ${http.parked} parked calls, HTTP backend (issue 30: 10,000 ≤ 300 MB)`, `${(http.rssBytes / 1024 / 1024).toFixed(0)} MB`]);
  const stdio = lastOf(m.memory.points, 'stdio');
  if (stdio) {
    rows.push([
      `gateway heap / RSS per parked call, stdio backend (${stdio.parked} parked; RSS within noise at so few), and the backend process each holds`,
      `${(stdio.heapPerCallBytes / 1024).toFixed(1)} / ${(stdio.rssPerCallBytes / 1024).toFixed(1)} KiB; ${((stdio.backendRssPerCallBytes ?? NaN) / 1024 / 1024).toFixed(1)} MB`,
    ]);
  }
  if (m.observe) {
    const o = m.observe;
    rows.push([
      'gateway CPU per 1k pass-through calls (conc. 16), observing off / metrics on / tracing on (100% sampled)',
      `${o.off.toFixed(0)} / ${o.metrics.toFixed(0)} (${x(o.metrics / o.off)}) / ${o.tracing.toFixed(0)} ms (${x(o.tracing / o.off)}; ${o.exportedRequests} OTLP exports)`,
    ]);
  }
  return rows;
}
