#!/usr/bin/env node
/**
 * Entry point: `mcp-mrtr-gateway [--config gateway.json] [--host 127.0.0.1] [--port 8787] [--proxy-tools] [--core]`.
 * Reads argv and the environment (MCP_GATEWAY_STATE_KEYS, LOG_LEVEL, OTEL_*), builds the config, starts
 * tracing when asked (otel-sdk.ts), serves on Node with @hono/node-server and drains on SIGINT/SIGTERM,
 * then flushes the last spans. The only module that reads process.env.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:net';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { isLoopback, parseConfig, type GatewayConfig } from './config.js';
import { workspaceFolderOf } from './config-folder.js';
import type { Logger } from './log.js';
import { createGateway, type Gateway } from './gateway.js';
import { createMetrics, type Metrics } from './observe/metrics.js';
import { limitConnections, listenEarly, type EarlyServer } from './node-listeners.js';
import { cutStalledSends } from './node-send-timeout.js';
import { background } from './util/background.js';
import { parseStateKeys, randomStateKey } from './protocol/request-state.js';
import { demoConfigFile } from './demo/demo-config.js';
import { startTracing, tracingConfigFrom, type Tracing } from './otel-sdk.js';
import { traceFields } from './util/tracing.js';
import { uriForLog } from './util/uri-for-log.js';
import { VERSION } from './version.js';

const USAGE = `mcp-mrtr-gateway ${VERSION}
Usage: mcp-mrtr-gateway [--config gateway.json] [--host 127.0.0.1] [--port 8787] [--proxy-tools] [--core]
  Without --config the gateway runs in front of the bundled demo backend.
  --proxy-tools  also serve the proxy tools (execute_tool, await_activity, ...; gateway.proxyTools.enabled)
  --core         session core behind an edge handler: legacy servers only, each also at <path>/<name> (gateway.core)
Environment:
  MCP_GATEWAY_STATE_KEYS  base64url 32-byte keys, comma-separated; the first seals requestState, all open
  MCP_GATEWAY_CLUSTER_SECRET  with gateway.cluster: the secret instances sign forwarded requests with
  LOG_LEVEL               pino level (default info)
  OTEL_TRACES_EXPORTER=otlp, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                          OpenTelemetry traces over OTLP/HTTP (JSON); off without them or with OTEL_SDK_DISABLED=true`;

/** A start-up refusal: one line on stderr (never a stack) and the exit code. */
class Refusal extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

type Options = ReturnType<typeof parseCommandLine>;

/** Where the logger writes, once made (its buffer is written out before anything printed past it). */
let logOut: ReturnType<typeof logDestination> | undefined;

/** The levels LOG_LEVEL may name: pino's own, the most severe first, and `silent`. */
const PINO_LEVELS = [
  ...Object.entries(pino.levels.values)
    .sort(([, a], [, b]) => b - a)
    .map(([name]) => name),
  'silent',
];

/** Parse args, load the config, start the gateway, listen, then serve until a stop signal has drained it. */
async function main(): Promise<number> {
  // Read first: a shell that ends while the gateway starts is seen once it serves.
  const npmShell = npmShellOf(process.env);
  try {
    const options = parseCommandLine(process.argv.slice(2));
    if (options.help || options.version) {
      console.log(options.help ? USAGE : VERSION);
      return 0;
    }
    const asked = tracingConfigFrom(process.env, { name: 'mcp-mrtr-gateway', version: VERSION });
    // With tracing on, every line logged inside a request's span carries its trace and span ids.
    logOut = logDestination();
    const level = process.env['LOG_LEVEL'] ?? 'info';
    if (!PINO_LEVELS.includes(level)) throw new Refusal(2, `LOG_LEVEL ${JSON.stringify(level)}: expected one of ${PINO_LEVELS.join(', ')}`);
    const logger = pino({ level, ...(asked.config ? { mixin: traceFields } : {}) }, logOut);
    const config = await loadConfig(options, logger);
    // The admin page's "drain" takes the same path as a stop signal (set once the handlers are in).
    const stopper = { drain: (): void => undefined };
    // The ports first: one that cannot be had refuses the start before the gateway joins a cluster.
    const listeners = await listenFirst(config);
    const openFiles = openFileLimit();
    // With the admin listener: the process's own metrics too (their observers live as long as the process).
    const admin = config.gateway.admin;
    const metrics = admin ? createMetrics({ processMetrics: true, principals: admin.principals, backends: config.servers.map((s) => s.name) }) : undefined;
    boundConnections(listeners, config, logger, openFiles, metrics);
    cutStalledClients(listeners, config, logger, metrics);
    const gateway = await startGateway(config, logger, () => stopper.drain(), openFiles, metrics).catch(async (e: unknown) => {
      await Promise.all([listeners.client.close(), listeners.admin?.close()]);
      throw e;
    });
    const tracing = startTracingFor(asked, gateway.instanceId, logger);
    try {
      await serveUntilStopped(serveOn(listeners, gateway, config, logger), gateway, config, logger, { stopper, npmShell });
    } finally {
      // The spans still buffered go out before the process ends.
      await tracing?.shutdown().catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'tracing: the last spans could not be sent'));
    }
    return 0;
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    logOut?.flushSync();
    console.error(`mcp-mrtr-gateway: ${e.message}`);
    return e.exitCode;
  }
}

/**
 * Where log lines go: stderr, written 4 KiB at a time, and at most 100 ms after a line came. Writing each
 * line on its own (one per MCP exchange at info) cost a write on libuv's thread pool each, a tenth of
 * a pass-through call's CPU, and on a pipe each one wakes the reader. The writes stay off the event loop
 * (a slow reader of stderr never stalls the gateway); pino writes what is still buffered when the
 * process exits, and `flushSync` writes it before a message that bypasses the logger.
 */
function logDestination(): { write(line: string): boolean; flushSync(): void } {
  const stderr = pino.destination({ dest: 2, sync: false, minLength: 4096 });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flushSoon = (): void => {
    timer = undefined;
    stderr.flush();
  };
  return {
    write(line) {
      stderr.write(line);
      if (timer === undefined) {
        timer = setTimeout(flushSoon, 100);
        timer.unref();
      }
      return true;
    },
    flushSync() {
      clearTimeout(timer);
      timer = undefined;
      try {
        stderr.flushSync();
      } catch {
        // stderr is gone, or not open yet: nothing to tell.
      }
    },
  };
}

/**
 * The OpenTelemetry SDK, when the `OTEL_*` variables ask for it (otel-sdk.ts), its resource naming this
 * instance; its notes (what it ignored) are logged. Undefined when tracing is off.
 */
function startTracingFor(asked: ReturnType<typeof tracingConfigFrom>, instanceId: string, logger: Logger): Tracing | undefined {
  for (const note of asked.notes) logger.warn({}, note);
  if (!asked.config) return undefined;
  const tracing = startTracing({ ...asked.config, instanceId });
  logger.info(
    { url: uriForLog(tracing.config.url), sampler: tracing.config.sampler, ratio: tracing.config.ratio },
    'tracing on: spans go to the OTLP/HTTP collector',
  );
  return tracing;
}

/** The command line's options; an unknown or malformed one is refused (exit 2). */
function parseCommandLine(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        config: { type: 'string', short: 'c' },
        host: { type: 'string' },
        port: { type: 'string', short: 'p' },
        'proxy-tools': { type: 'boolean' },
        core: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
      strict: true,
    }).values;
  } catch (e) {
    throw new Refusal(2, `${(e as Error).message} (see --help)`);
  }
}

/**
 * The validated config: the `--config` file (or the demo's), the command line's host, port and
 * `--proxy-tools` over its `gateway` section, then the environment. Every problem is listed (exit 2).
 */
async function loadConfig(options: Options, logger: Logger): Promise<GatewayConfig> {
  const raw = withCommandLine(await readConfigFile(options.config), options);
  // ${workspaceFolder}: the config file's folder, or the project its `.vscode` / `.cursor` folder belongs to.
  const configDir = options.config ? workspaceFolderOf(resolve(options.config)) : undefined;
  const where = { userHome: homedir(), ...(configDir ? { configDir } : {}) };
  const parsed = parseConfig(raw, process.env, where);
  if (!parsed.ok) throw new Refusal(2, `invalid configuration:\n${parsed.error.map((p) => `  - ${p}`).join('\n')}`);
  for (const note of parsed.value.notes) logger.info({}, note);
  return parsed.value;
}

/** The config file as JSON, or the demo's config without one. */
async function readConfigFile(file: string | undefined): Promise<unknown> {
  if (!file) return demoConfigFile();
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new Refusal(2, `cannot read ${file}: ${(e as Error).message}`);
  }
}

/** `raw` with the command line's host, port, `--proxy-tools` and `--core` set in its `gateway` section. */
function withCommandLine(raw: unknown, options: Options): unknown {
  if (!raw || typeof raw !== 'object') return raw;
  const file = raw as { gateway?: Record<string, unknown> };
  const gw = { ...(file.gateway ?? {}) };
  if (options.host !== undefined) gw['host'] = options.host;
  if (options.port !== undefined) {
    if (!/^\d{1,5}$/.test(options.port) || Number(options.port) > 65_535) throw new Refusal(2, `--port ${options.port}: expected a port number (0 to 65535)`);
    gw['port'] = Number(options.port);
  }
  if (options['proxy-tools']) gw['proxyTools'] = { ...((gw['proxyTools'] as object | undefined) ?? {}), enabled: true };
  if (options.core) gw['core'] = true;
  return { ...file, gateway: gw };
}

/** The requestState keys of MCP_GATEWAY_STATE_KEYS (a malformed one is refused, exit 2), else one random key. */
async function loadStateKeys(logger: Logger): Promise<Awaited<ReturnType<typeof parseStateKeys>>> {
  const keyText = process.env['MCP_GATEWAY_STATE_KEYS'];
  if (!keyText) {
    logger.warn({}, 'MCP_GATEWAY_STATE_KEYS is not set: using a random key; input_required retries will not survive a restart');
    return [await randomStateKey()];
  }
  try {
    return await parseStateKeys(keyText);
  } catch (e) {
    throw new Refusal(2, `MCP_GATEWAY_STATE_KEYS: ${(e as Error).message}`);
  }
}

/** The gateway, started with its keys and cluster secret; a start-up refusal (Redis unreachable, an instance id in use) exits 1. */
async function startGateway(
  config: GatewayConfig,
  logger: Logger,
  onAdminDrain: () => void,
  openFiles: number | undefined,
  metrics: Metrics | undefined,
): Promise<Gateway> {
  const stateKeys = await loadStateKeys(logger);
  warnOnLowFdLimit(config, logger, openFiles);
  warnOnOpenDoor(config, logger);
  const clusterSecret = process.env['MCP_GATEWAY_CLUSTER_SECRET'] || undefined;
  if (config.gateway.cluster && clusterSecret !== undefined && Buffer.byteLength(clusterSecret) < 32) {
    logger.warn({}, 'MCP_GATEWAY_CLUSTER_SECRET is shorter than 32 bytes: anyone who guesses it can send requests as another instance');
  }
  try {
    return await createGateway(config, { stateKeys, logger, clusterSecret, onAdminDrain, ...(metrics ? { metrics } : {}) });
  } catch (e) {
    throw new Refusal(1, `cannot start: ${(e as Error).message}`);
  }
}

/** The client port, and the admin port when configured, listening before the gateway starts; a port that cannot be had exits 2. */
async function listenFirst(config: GatewayConfig): Promise<{ client: EarlyServer; admin: EarlyServer | undefined }> {
  const { host, port, admin } = config.gateway;
  const client = await listenEarly(host, port, requestDeadlines(config));
  if (!('serve' in client)) throw new Refusal(2, `cannot listen: ${whyNot(client, host, port)}`);
  if (!admin) return { client, admin: undefined };
  const adminServer = await listenEarly(admin.host, admin.port, requestDeadlines(config));
  if ('serve' in adminServer) return { client, admin: adminServer };
  await client.close();
  throw new Refusal(2, `cannot listen (admin): ${whyNot(adminServer, admin.host, admin.port)}`);
}

function whyNot(error: NodeJS.ErrnoException, host: string, port: number): string {
  return error.code === 'EADDRINUSE' ? `port ${port} on ${host} is already in use` : error.message;
}

/** Hands the listening servers to the gateway (the admin one to its admin surface); the servers. */
function serveOn(listeners: { client: EarlyServer; admin: EarlyServer | undefined }, gateway: Gateway, config: GatewayConfig, logger: Logger): ServerType[] {
  const { host, path } = config.gateway;
  // Cluster mode: the other instances open their channels to this one with an HTTP CONNECT.
  listeners.client.serve(gateway.fetch, gateway.connect);
  logger.info(
    { url: `http://${urlHost(host)}:${listeners.client.port}${path}`, backends: config.servers.map((s) => s.name), instanceId: gateway.instanceId },
    'gateway listening',
  );
  const { admin } = listeners;
  if (!admin) return [listeners.client.server];
  if (!gateway.admin) {
    background('close the admin listener', admin.close(), logger);
    return [listeners.client.server];
  }
  admin.serve(gateway.admin.fetch, gateway.connect);
  logger.info({ url: `http://${urlHost(gateway.admin.host)}:${admin.port}/` }, 'admin listening');
  return [listeners.client.server, admin.server];
}

/**
 * What to do each time the Node server closes a client connection itself for `reason`: count it in the
 * metrics, and `warn` with how many so far, at most once a minute.
 */
function closedConnections(reason: 'max_connections' | 'send_timeout', metrics: Metrics | undefined, warn: (closed: number) => void): () => void {
  let closed = 0;
  let warnedAt = -Infinity;
  return () => {
    closed++;
    metrics?.connectionClosed(reason);
    if (performance.now() - warnedAt < 60_000) return;
    warnedAt = performance.now();
    warn(closed);
  };
}

/**
 * Holds each listener to `gateway.maxConnections` client connections (default: half the open-file
 * limit); past it a connection is closed as it comes, logged at warn at most once a minute with how many.
 */
function boundConnections(
  listeners: { client: EarlyServer; admin: EarlyServer | undefined },
  config: GatewayConfig,
  logger: Logger,
  openFiles: number | undefined,
  metrics: Metrics | undefined,
): void {
  const max = config.gateway.maxConnections ?? (openFiles !== undefined ? Math.max(16, Math.floor(openFiles / 2)) : undefined);
  if (max === undefined) return;
  const onDrop = closedConnections('max_connections', metrics, (dropped) =>
    logger.warn({ maxConnections: max, dropped }, 'client connection closed as it came: gateway.maxConnections are open (logged at most once a minute)'),
  );
  for (const listener of [listeners.client, listeners.admin]) if (listener) limitConnections(listener.server, max, onDrop);
}

/**
 * Closes each client connection that leaves what is sent to it untaken for `gateway.sendTimeoutMs`
 * (node-send-timeout.ts), logged at warn at most once a minute with how many so far.
 */
function cutStalledClients(
  listeners: { client: EarlyServer; admin: EarlyServer | undefined },
  config: GatewayConfig,
  logger: Logger,
  metrics: Metrics | undefined,
): void {
  const ms = config.gateway.sendTimeoutMs;
  const onCut = closedConnections('send_timeout', metrics, (cut) =>
    logger.warn(
      { sendTimeoutMs: ms, cut },
      'client connection closed: it took nothing of what was sent to it for gateway.sendTimeoutMs (logged at most once a minute)',
    ),
  );
  for (const listener of [listeners.client, listeners.admin]) if (listener) cutStalledSends(listener.server as Server, ms, onCut);
}

const urlHost = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/**
 * The Node server's deadlines for receiving a request (`requestTimeoutMs`): its head within Node's 60 s
 * or the whole deadline if shorter (Node refuses a head deadline past the request's), and the whole
 * request within the deadline, checked a tenth of it apart (Node checks every 30 s by default, so a
 * deadline of 30 s would let a body trickle for up to a minute); and how long an idle connection is
 * kept (`keepAliveTimeoutMs`).
 */
function requestDeadlines(config: GatewayConfig): {
  requestTimeout: number;
  headersTimeout: number;
  connectionsCheckingInterval: number;
  keepAliveTimeout: number;
} {
  const ms = config.gateway.requestTimeoutMs;
  return {
    requestTimeout: ms,
    headersTimeout: Math.min(60_000, ms),
    connectionsCheckingInterval: Math.max(250, Math.min(30_000, Math.round(ms / 10))),
    keepAliveTimeout: config.gateway.keepAliveTimeoutMs,
  };
}

/**
 * Resolves once a stop signal (SIGINT, SIGTERM) has drained the gateway and closed the server: new
 * work gets 503, parked calls may still be retried until `drainTimeoutMs` (gateway/drain.ts), then the
 * sockets close. A second signal closes at once. The process exits by a deadline whatever still holds it.
 */
function serveUntilStopped(
  servers: ServerType[],
  gateway: Gateway,
  config: GatewayConfig,
  logger: Logger,
  { stopper, npmShell }: { stopper: { drain: () => void }; npmShell: number | undefined },
): Promise<void> {
  // Handlers go in before the backends have connected: a signal during start-up drains too.
  return new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        // A second signal skips what is left of the drain: calls are cancelled and backends end now.
        logger.info({ signal }, 'second stop signal: closing now');
        background('close the gateway', gateway.close(), logger);
        return;
      }
      stopping = true;
      const { drainTimeoutMs } = config.gateway;
      // Said once, where an operator waiting on a drain looks: how to skip what is left of it.
      logger.info({ signal, drainTimeoutMs, closeNow: 'a second SIGINT or SIGTERM' }, 'shutting down');
      exitByDeadline(drainTimeoutMs + EXIT_GRACE_MS, logger);
      // Drain first (new work gets 503, parked calls may still be retried), then close the sockets.
      const drained = gateway.drain().finally(() => {
        let open = servers.length;
        for (const server of servers) {
          // Idle connections close now; answers still being written (a call cancelled at the deadline,
          // a forward ended with gateway_closing) get ANSWER_GRACE_MS to go out before the rest close.
          const cut = setTimeout(() => (server as { closeAllConnections?: () => void }).closeAllConnections?.(), ANSWER_GRACE_MS);
          cut.unref();
          server.close(() => {
            clearTimeout(cut);
            if (--open === 0) resolve();
          });
          (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
        }
      });
      background('drain the gateway', drained, logger);
    };
    // The admin page's drain starts one, as a signal does; pressed again, it does not escalate as a second signal would.
    stopper.drain = () => {
      if (!stopping) stop('admin');
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    stopWhenShellEnds(npmShell, () => {
      if (!stopping) stop('npm start ended');
    });
  });
}

/** How often a gateway started by `npm start` looks whether the shell npm ran it in is still its parent. */
const PARENT_CHECK_MS = 500;

/**
 * The shell `npm start` runs the gateway in (its parent now), or undefined when not started so. npm
 * runs the script through `sh -c`; where that is dash, the shell does not exec the gateway and passes
 * no SIGTERM on: what signals npm alone (a plain `kill` of its pid, supervisord without
 * `stopasgroup`) ends npm and the shell, and the gateway would run on, re-parented, holding its port.
 * (Where `sh` is bash it execs the gateway, and npm's signal reaches it. Windows re-parents nothing.)
 */
function npmShellOf(env: NodeJS.ProcessEnv): number | undefined {
  return env['npm_lifecycle_event'] === 'start' && process.platform !== 'win32' ? process.ppid : undefined;
}

/** Started by `npm start`, the end of its shell is a stop signal too (a drain, as SIGTERM's; one under way goes on). */
function stopWhenShellEnds(parent: number | undefined, stop: () => void): void {
  if (parent === undefined) return;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, PARENT_CHECK_MS);
  timer.unref();
}

/** How long the answers still being written when the gateway has closed get before their connections close. */
const ANSWER_GRACE_MS = 1_000;

/**
 * How long past `drainTimeoutMs` the process may take to exit after a stop signal: closing ends every
 * backend's process group (SIGKILL after KILL_GRACE_MS, 2 s), which this leaves room for.
 */
const EXIT_GRACE_MS = 5_000;

/**
 * The process exits `ms` after a stop signal whatever still holds it (a backend process that survived
 * SIGKILL, a socket that never closed): it logs what is left and exits (code 1). The timer is unref'd:
 * a process with nothing left exits on its own before it fires.
 */
function exitByDeadline(ms: number, logger: Logger): void {
  const timer = setTimeout(() => {
    logger.warn({ afterMs: ms, holding: process.getActiveResourcesInfo() }, 'shutdown deadline passed: exiting with work left');
    process.exit(1);
  }, ms);
  timer.unref();
}

/** Listening beyond loopback with neither API keys nor OAuth: anyone who reaches the port uses every backend as `anonymous`. */
function warnOnOpenDoor(config: GatewayConfig, logger: Logger): void {
  const { host, oauth } = config.gateway;
  if (isLoopback(host) || config.apiKeys.size > 0 || oauth) return;
  logger.warn({ host }, `listening on ${host} without gateway.apiKeys or gateway.oauth: anyone who can reach this port can call every backend`);
}

/** The process's open-file limit (what `ulimit -n` says), or undefined where it cannot be read or has none. */
function openFileLimit(): number | undefined {
  if (process.platform === 'win32') return undefined;
  try {
    const text = execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2_000 }).trim();
    const limit = Number(text);
    return text !== 'unlimited' && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every parked call holds a backend socket (HTTP) or shares a process (stdio: 3 pipes each), and each
 * client connection is a socket: at the default `maxParkedTotal` (1,024) that is more than the common
 * default limit of 1,024 open files. Warns with the number needed; POSIX only.
 */
function warnOnLowFdLimit(config: GatewayConfig, logger: Logger, limit: number | undefined): void {
  if (limit === undefined) return;
  const g = config.gateway;
  const processes = config.servers.reduce((n, s) => n + (s.kind === 'stdio' ? (s.maxSessions ?? g.maxSessionsPerBackend) + 2 : 0), 0);
  const needed = g.maxParkedTotal * 2 + processes * 3 + g.maxListenTotal + (g.proxyTools.enabled ? g.proxyTools.maxAwaitTotal : 0) + 256;
  if (Number.isFinite(limit) && limit < needed) {
    logger.warn(
      { openFileLimit: limit, needed, maxParkedTotal: g.maxParkedTotal },
      `the open-file limit (${limit}) is below what this configuration may need (about ${needed}): raise it (ulimit -n ${needed}) or lower gateway.maxParkedTotal`,
    );
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    logOut?.flushSync();
    console.error(`mcp-mrtr-gateway: ${(e as Error).stack ?? String(e)}`);
    process.exitCode = 1;
  },
);
