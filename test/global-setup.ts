/**
 * vitest global setup. Before the run, `src/` and the fixtures are transpiled into `.built/` (the same
 * tree, plain JavaScript: see test/helpers/built.ts), which the processes tests start run from. After the whole run, no process the tests started may survive. Backend
 * fixtures run as child processes of the test workers; any of them still alive after the run (and
 * started during it) is a leak: it is reported, killed, and the run fails. Processes are matched by
 * their command line under this checkout's folder, so two test runs at once in the same checkout would
 * see each other's fixtures: run one at a time per checkout (CI does).
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { BUILT } from './helpers/built.js';

const ROOT = join(import.meta.dirname, '..');
/** Command-line fragments of the processes tests start. */
const MARKERS = [
  join(ROOT, 'test', 'fixtures'),
  join(ROOT, 'spec', 'fixtures'),
  join(ROOT, 'spec', 'sep-2322-draft', 'fixtures'),
  join(ROOT, 'src', 'demo'),
  join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-'),
  // workerd, which the edge handler's tests run (miniflare).
  join(ROOT, 'node_modules', '@cloudflare'),
  BUILT,
];

let startedAt = 0;

function survivors(): { pid: number; args: string }[] {
  const elapsed = Math.ceil((Date.now() - startedAt) / 1000) + 1;
  const out = execFileSync('ps', ['-eo', 'pid=,etimes=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .filter((m) => Number(m[2]) <= elapsed && Number(m[1]) !== process.pid && MARKERS.some((k) => m[3]!.includes(k)))
    .map((m) => ({ pid: Number(m[1]), args: m[3]! }));
}

export async function setup(): Promise<void> {
  startedAt = Date.now();
  rmSync(BUILT, { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: ['src/**/*.ts', 'test/fixtures/*.ts', 'spec/fixtures/**/*.ts', 'spec/sep-2322-draft/fixtures/*.ts'],
    outdir: BUILT,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
}

export async function teardown(): Promise<void> {
  // Processes on their way out get 15 s (a loaded machine), looked at every 100 ms (each look runs ps).
  const deadline = Date.now() + 15_000;
  let left = survivors();
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = survivors();
  }
  if (!left.length) return;
  for (const p of left) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exitCode = 1;
  throw new Error(`${left.length} process(es) started by the tests outlived the run:\n${left.map((p) => `  ${p.pid} ${p.args.slice(0, 200)}`).join('\n')}`);
}
