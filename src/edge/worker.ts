/**
 * The edge handler as a Worker module (Cloudflare Workers style; any runtime with `fetch`, Web Crypto
 * and Web Streams): `export default { fetch }`. Built by `npm run build:edge` into dist/edge/worker.js
 * (one file, its dependencies inside). The first request of an isolate builds the gateway from the
 * bindings (edge-config.ts); later requests reuse it. A configuration the edge cannot serve is logged
 * problem by problem (never a binding's value) and every request is answered 500 with a JSON-RPC error
 * that points to the log (clients learn nothing of the configuration).
 */
import { WireCode } from '../errors.js';
import { consoleLogger, isLogLevel } from './console-logger.js';
import { edgeConfigOf } from './edge-config.js';
import { createEdgeGateway, type EdgeGateway } from './edge-gateway.js';

type Built = { ok: true; gateway: EdgeGateway } | { ok: false };

let built: Promise<Built> | undefined;
let builtFor: object | undefined;

async function build(env: Record<string, unknown>): Promise<Built> {
  const level = env['LOG_LEVEL'];
  const logger = consoleLogger(isLogLevel(level) ? level : 'info');
  if (level !== undefined && !isLogLevel(level)) logger.warn({}, 'LOG_LEVEL is not a level name (trace, debug, info, warn, error, fatal, silent): info');
  const read = await edgeConfigOf(env);
  if (!read.ok) {
    logger.error({ problems: read.error }, 'the edge handler cannot start: configuration');
    return { ok: false };
  }
  return { ok: true, gateway: await createEdgeGateway(read.value.config, { stateKeys: read.value.stateKeys, logger }) };
}

function refusal(): Response {
  const body = { jsonrpc: '2.0', id: null, error: { code: WireCode.InternalError, message: 'The edge handler is misconfigured (its log says how)' } };
  return new Response(JSON.stringify(body), { status: 500, headers: { 'content-type': 'application/json' } });
}

async function fetchHandler(request: Request, env: Record<string, unknown>): Promise<Response> {
  // One gateway per isolate and bindings object (a new deployment brings new bindings).
  if (built === undefined || builtFor !== env) {
    builtFor = env;
    built = build(env).catch((e: unknown) => {
      consoleLogger('error').error({ err: (e as Error).message }, 'the edge handler cannot start');
      return { ok: false as const };
    });
  }
  const b = await built;
  return b.ok ? b.gateway.fetch(request) : refusal();
}

export default { fetch: fetchHandler };
