/**
 * `npm run inspector`: the MCP Inspector's CLI, as a user runs it, against the gateway in front of the
 * bundled demo backend (what `npm start` serves). The Inspector needs Node ≥ 22.19: it runs on the same
 * Node 22 as the conformance CLI (spec/conformance/node22.ts), and is installed, pinned, into
 * `.cache/inspector/` on first use (not a dependency of the project). The gateway runs on this Node.
 *
 * Checks, each one CLI run: tools/list and tools/call in the Inspector's default (legacy) era over
 * streamable HTTP (`/mcp`) and over the 2024-11-05 SSE transport (`/sse`), and tools/call in its
 * `modern` (2026-07-28) era. Prints a line per check; exits non-zero when one fails.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoConfigFile } from '../../src/demo/demo-config.js';
import { startGateway } from '../../test/helpers/gateway.js';
import { ROOT, findCliNode, npmError, runNpm, runOnNode } from '../conformance/node22.js';

const INSPECTOR_VERSION = '2.12.0';
const CACHE = join(ROOT, '.cache', 'inspector');
const PKG = join(CACHE, 'node_modules', '@modelcontextprotocol', 'inspector');

/** The Inspector's launcher, installed into .cache/inspector on first use. */
function inspectorCli(): string {
  const installed = existsSync(join(PKG, 'package.json'))
    ? (JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8')) as { version: string }).version
    : undefined;
  if (installed !== INSPECTOR_VERSION) {
    console.log(`inspector: installing @modelcontextprotocol/inspector@${INSPECTOR_VERSION} into .cache/inspector (first run only)`);
    mkdirSync(CACHE, { recursive: true });
    const npm = runNpm([
      'install',
      '--prefix',
      CACHE,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `@modelcontextprotocol/inspector@${INSPECTOR_VERSION}`,
    ]);
    if (npm.status !== 0) throw new Error(`inspector: could not install it (${npmError(npm)})`);
  }
  const bin = (JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['mcp-inspector'];
  if (!bin) throw new Error('inspector: the package names no mcp-inspector binary');
  return join(PKG, bin);
}

interface Check {
  readonly name: string;
  readonly args: (base: string) => string[];
  /** What the output must show. */
  readonly expect: (output: unknown) => boolean;
}

const textOf = (o: unknown): string | undefined => ((o as { content?: { text?: string }[] } | undefined)?.content ?? [])[0]?.text;

const CHECKS: readonly Check[] = [
  {
    name: 'legacy era, streamable HTTP: tools/list',
    args: (base) => ['--cli', `${base}/mcp`, '--transport', 'http', '--method', 'tools/list'],
    expect: (o) => ((o as { tools?: { name: string }[] }).tools ?? []).some((t) => t.name === 'echo'),
  },
  {
    name: 'legacy era, streamable HTTP: tools/call echo',
    args: (base) => ['--cli', `${base}/mcp`, '--transport', 'http', '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=hi'],
    expect: (o) => textOf(o) === 'hi',
  },
  {
    name: 'legacy era, 2024-11-05 SSE: tools/call echo',
    args: (base) => ['--cli', `${base}/sse`, '--transport', 'sse', '--method', 'tools/call', '--tool-name', 'echo', '--tool-arg', 'text=sse'],
    expect: (o) => textOf(o) === 'sse',
  },
  {
    name: 'modern era (2026-07-28): tools/call add',
    args: (base) => [
      '--cli',
      `${base}/mcp`,
      '--transport',
      'http',
      '--protocol-era',
      'modern',
      '--method',
      'tools/call',
      '--tool-name',
      'add',
      '--tool-arg',
      'a=2',
      '--tool-arg',
      'b=3',
    ],
    expect: (o) => textOf(o) === '5' && (o as { resultType?: unknown }).resultType === 'complete',
  },
];

async function main(): Promise<number> {
  const found = findCliNode();
  if (!found.ok) {
    console.error(found.error);
    return 2;
  }
  const node = found.value;
  const [major = 0, minor = 0] = node.version.replace(/^v/, '').split('.').map(Number);
  if (major === 22 && minor < 19) {
    console.error(`inspector: needs Node >= 22.19, found ${node.version} (${node.source}); set CONFORMANCE_NODE`);
    return 2;
  }
  const cli = inspectorCli();
  const gw = await startGateway(demoConfigFile() as Record<string, unknown>);
  const base = gw.url.replace(/\/mcp$/, '');
  const home = mkdtempSync(join(tmpdir(), 'inspector-home-'));
  let failed = 0;
  console.log(
    `inspector: @modelcontextprotocol/inspector@${INSPECTOR_VERSION} on Node ${node.version} (${node.source}); the gateway on Node ${process.version}`,
  );
  try {
    for (const check of CHECKS) {
      const r = await runOnNode(node, [cli, ...check.args(base)], { cwd: home, env: { HOME: home }, timeoutMs: 60_000 });
      let output: unknown;
      try {
        output = JSON.parse(r.out.slice(r.out.indexOf('{')));
      } catch {
        output = undefined;
      }
      const ok = r.code === 0 && output !== undefined && check.expect(output);
      if (!ok) failed++;
      console.log(`inspector ${ok ? 'PASS' : 'FAIL'} ${check.name}${ok ? '' : ` — exit ${r.code}: ${r.out.trim().slice(0, 400)}`}`);
    }
  } finally {
    await gw.close();
    rmSync(home, { recursive: true, force: true });
  }
  console.log(failed === 0 ? `inspector: ${CHECKS.length}/${CHECKS.length}` : `inspector: ${failed} of ${CHECKS.length} checks failed`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`inspector: ${(e as Error).stack ?? String(e)}`);
    process.exit(1);
  },
);
