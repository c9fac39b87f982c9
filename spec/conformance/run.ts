/**
 * `npm run conformance`: the official MCP conformance suite (@modelcontextprotocol/conformance, pinned
 * in package.json), run against the gateway in front of the LEGACY fixture spec/fixtures/legacy-everything.
 *
 * Sets, each at its own wire version:
 *   - "2026-07-28 required": `--requirements 2026-07-28` (37 scored; the tasks extension and pending
 *     scenarios it also runs are reported, not scored);
 *   - "tasks extension": each `tasks-*` scenario (extensions run at 2026-07-28);
 *   - "2025-11-25": `--requirements 2025-11-25` (stateful wire, needs the legacy client route);
 *   - "2026-07-28 at the edge": the required set again, against the edge handler (dist bundle of
 *     src/edge/worker.ts) in workerd, with this gateway behind it as its session core (issue 31).
 * Each set has its expected-failures baseline in spec/conformance/baselines/ (one file per set: the
 * suite's baseline format cannot say "fails at 2025-11-25, passes at 2026-07-28"), so a regression
 * fails, and so does a baseline entry that has started to pass.
 *
 * The CLI needs Node >= 22 (../../../shared/spec/conformance.md §1.1); the gateway runs here, in-process,
 * on the current Node. The CLI's Node, first match wins: `CONFORMANCE_NODE` (path to a node binary); this
 * Node if it is 22+; else the platform's official Node 22 package from the npm registry
 * (`node-<platform>-<arch>@22`), installed on first run into .cache/node22/ (outside node_modules/.bin and
 * PATH) and reused afterwards.
 *
 * Prints one line per scenario and a total per set; exits non-zero if any set does not match the baseline.
 * `--only required,tasks,2025-11-25,edge` runs some of the sets (all by default).
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { parseConfig } from '../../src/config.js';
import { createGateway } from '../../src/gateway.js';
import { randomStateKey } from '../../src/protocol/request-state.js';
import { startLegacyEverything } from '../fixtures/legacy-everything/http.js';
import { findCliNode, runOnNode, type CliNode } from './node22.js';
import { startEdgeWorker } from './edge-worker.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const BASELINES = join(ROOT, 'spec', 'conformance', 'baselines');
const REQUIREMENTS = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'requirements');
const RESULTS = join(ROOT, '.conformance');
const TASK_SCENARIOS = [
  'tasks-lifecycle',
  'tasks-capability-negotiation',
  'tasks-wire-fields',
  'tasks-request-state-removal',
  'tasks-mrtr-input',
  'tasks-request-headers',
  'tasks-dispatch-and-envelope',
  'tasks-status-notifications',
  'tasks-required-task-error',
  'tasks-mrtr-composition',
];

/**
 * Which fixture tools become tasks, as an operator would configure them (README "Tasks"): the long or
 * interactive jobs of the tasks scenarios at once, `test_tool_with_task` once its input round is over
 * and it has worked for a second, `greet` never. Every other tool keeps the gateway default.
 */
const TASK_TOOLS = {
  tools: {
    greet: { support: 'forbidden' },
    slow_compute: { promoteAfterMs: 0 },
    failing_job: { support: 'required', promoteAfterMs: 0 },
    protocol_error_job: { support: 'required', promoteAfterMs: 0 },
    confirm_delete: { support: 'required', promoteAfterMs: 0 },
    multi_input: { support: 'required', promoteAfterMs: 0 },
    test_tool_with_task: { promoteAfterMs: 1_000 },
  },
};

const onlyArg = process.argv.indexOf('--only');
const only = onlyArg > 0 ? process.argv[onlyArg + 1]?.split(',') : undefined;
/** Whether the set named `name` runs (`--only`; default all). */
const SETS = ['required', 'tasks', '2025-11-25', 'edge'] as const;
const runs = (name: (typeof SETS)[number]): boolean => !only || only.includes(name);

interface ScenarioLine {
  name: string;
  passed: number;
  failed: number;
  ok: boolean;
  scored: boolean;
}

/** Scenarios named in a baseline (with their reason comments). */
function baselineEntries(file: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*-\s*([^\s#]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (m) out.set(m[1]!, m[2] ?? '');
  }
  return out;
}

function runCli(node: CliNode, args: string[]): Promise<{ code: number; out: string }> {
  return runOnNode(node, [CLI, ...args], { cwd: ROOT, timeoutMs: 10 * 60_000 });
}

/** The server scenarios a requirements file scores (its top-level `server:` list). */
function scoredScenarios(revision: string): Set<string> {
  const text = readFileSync(join(REQUIREMENTS, `${revision}.yaml`), 'utf8');
  const block = /^server:\n((?:\s+- .*\n)+)/m.exec(text)?.[1] ?? '';
  return new Set([...block.matchAll(/-\s+(\S+)/g)].map((m) => m[1]!));
}

/** Reads the `=== SUMMARY ===` block: `✓|✗ name: N passed, M failed`. */
function parseSummary(out: string, scored?: Set<string>): ScenarioLine[] {
  const summary = out.slice(Math.max(0, out.indexOf('=== SUMMARY ===')));
  const lines: ScenarioLine[] = [];
  for (const m of summary.matchAll(/^([✓✗])\s+(\S+):\s+(\d+) passed, (\d+) failed/gm)) {
    lines.push({ name: m[2]!, ok: m[1] === '✓', passed: Number(m[3]), failed: Number(m[4]), scored: scored ? scored.has(m[2]!) : true });
  }
  return lines;
}

/** Parses single-scenario output (`Passed: a/b, f failed, w warnings`). */
function parseSingle(name: string, out: string): ScenarioLine[] {
  const m = /Passed:\s*(\d+)\/(\d+),\s*(\d+) failed(?:,\s*(\d+) warnings)?/.exec(out);
  if (!m) return [{ name, ok: false, passed: 0, failed: 1, scored: true }];
  const failed = Number(m[3]) + Number(m[4] ?? 0);
  return [{ name, ok: failed === 0, passed: Number(m[1]), failed, scored: true }];
}

async function main(): Promise<number> {
  const unknown = only?.filter((o) => !(SETS as readonly string[]).includes(o)) ?? [];
  if (unknown.length) {
    console.error(`conformance: --only takes ${SETS.join(', ')} (not ${unknown.join(', ')})`);
    return 2;
  }
  if (!existsSync(CLI)) {
    console.error('conformance: run `npm ci` first (needs @modelcontextprotocol/conformance)');
    return 2;
  }
  const found = findCliNode();
  if (!found.ok) {
    console.error(found.error);
    return 2;
  }
  const node = found.value;
  console.log(`conformance: the CLI runs on Node ${node.version} (${node.source}: ${node.path}); the gateway on Node ${process.version}`);
  rmSync(RESULTS, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });
  const backend = await startLegacyEverything();
  const parsed = parseConfig({ mcpServers: { everything: { url: backend.url, tasks: TASK_TOOLS } } });
  if (!parsed.ok) throw new Error(parsed.error.join('\n'));
  const gateway = await createGateway(parsed.value, { stateKeys: [await randomStateKey()] });
  const server = serve({ fetch: gateway.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => server.once('listening', () => r()));
  await gateway.ready;
  const url = `http://localhost:${(server.address() as AddressInfo).port}/mcp`;
  let failures = 0;

  const report = (set: string, baselineFile: string, lines: ScenarioLine[], code: number, out: string): void => {
    const baseline = baselineEntries(baselineFile);
    const scored = lines.filter((l) => l.scored);
    for (const l of lines) {
      const expected = baseline.has(l.name) ? ` (baseline: ${baseline.get(l.name)})` : '';
      console.log(
        `${set.padEnd(20)} ${l.ok ? 'PASS' : 'FAIL'} ${l.name} — ${l.passed} passed, ${l.failed} failed${l.scored ? '' : ' [not scored]'}${l.ok ? '' : expected}`,
      );
    }
    console.log(`${set}: ${scored.filter((l) => l.ok).length}/${scored.length}${code === 0 ? '' : '  ✗ does not match the expected-failures baseline'}`);
    if (code !== 0) {
      failures++;
      console.log(
        out
          .split('\n')
          .filter((l) => /baseline|expected|stale|regress/i.test(l))
          .slice(0, 40)
          .join('\n'),
      );
    }
  };

  try {
    if (runs('required')) {
      const b26 = join(BASELINES, '2026-07-28.yaml');
      const req26 = await runCli(node, ['server', '--url', url, '--requirements', '2026-07-28', '--expected-failures', b26, '-o', join(RESULTS, '2026-07-28')]);
      report('2026-07-28 required', b26, parseSummary(req26.out, scoredScenarios('2026-07-28')), req26.code, req26.out);
    }

    if (runs('tasks')) {
      const bTasks = join(BASELINES, 'tasks.yaml');
      const taskLines: ScenarioLine[] = [];
      let taskCode = 0;
      let taskOut = '';
      for (const scenario of TASK_SCENARIOS) {
        const r = await runCli(node, ['server', '--url', url, '--scenario', scenario, '--expected-failures', bTasks, '-o', join(RESULTS, 'tasks')]);
        taskLines.push(...parseSingle(scenario, r.out));
        if (r.code !== 0) {
          taskCode = r.code;
          taskOut += r.out;
        }
      }
      report('tasks extension', bTasks, taskLines, taskCode, taskOut);
    }

    if (runs('2025-11-25')) {
      const b25 = join(BASELINES, '2025-11-25.yaml');
      const req25 = await runCli(node, ['server', '--url', url, '--requirements', '2025-11-25', '--expected-failures', b25, '-o', join(RESULTS, '2025-11-25')]);
      report('2025-11-25', b25, parseSummary(req25.out, scoredScenarios('2025-11-25')), req25.code, req25.out);
    }

    if (runs('edge')) {
      const edge = await startEdgeWorker(join(RESULTS, 'edge-worker'), url);
      try {
        const bEdge = join(BASELINES, '2026-07-28-edge.yaml');
        const reqEdge = await runCli(node, [
          'server',
          '--url',
          edge.url,
          '--requirements',
          '2026-07-28',
          '--expected-failures',
          bEdge,
          '-o',
          join(RESULTS, 'edge'),
        ]);
        report('2026-07-28 at the edge', bEdge, parseSummary(reqEdge.out, scoredScenarios('2026-07-28')), reqEdge.code, reqEdge.out);
      } finally {
        await edge.close();
      }
    }
  } finally {
    const closed = new Promise<void>((r) => server.close(() => r()));
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    await gateway.close();
    await closed;
    await backend.close();
  }
  console.log(failures === 0 ? 'conformance: every set matches the expected-failures baseline' : `conformance: ${failures} set(s) do not match the baseline`);
  return failures === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
