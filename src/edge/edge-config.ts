/**
 * The edge handler's configuration, from the runtime's bindings (a Worker's `env`): the same shape as
 * gateway.json where it can be. `MCP_GATEWAY_CONFIG` holds the file's object (a table of `[vars]`, or
 * its JSON text); every string binding is an environment variable to it (`keyEnv`, `${VAR}` in server
 * entries, `clientSecretEnv`), so secrets stay in secret bindings. `MCP_GATEWAY_STATE_KEYS` (a secret)
 * is required: every instance of the edge must open every other's requestState.
 *
 * What the edge can reach: 2026-07-28 servers by URL only. A stdio server or a 2025-era one needs a
 * session that outlives a request; it lives behind a session core (the Node gateway, itself a
 * 2026-07-28 server to the edge). What the edge does not do (a cluster of its own, the admin listener,
 * the proxy tools, rate limits, state on disk) is refused by name rather than ignored.
 */
import { parseConfig, type GatewayConfig } from '../config.js';
import { parseStateKeys, type StateKey } from '../protocol/state-codec.js';
import { type Result, err, ok } from '../util/result.js';

/** The binding that holds the gateway.json-shaped configuration. */
export const CONFIG_BINDING = 'MCP_GATEWAY_CONFIG';
/** The secret binding with the requestState keys (base64url 32-byte keys; the first seals, all open). */
export const STATE_KEYS_BINDING = 'MCP_GATEWAY_STATE_KEYS';

export interface EdgeConfig {
  readonly config: GatewayConfig;
  readonly stateKeys: readonly StateKey[];
}

/** Reads and checks the bindings; every problem found, each naming the binding or the config path. */
export async function edgeConfigOf(bindings: Readonly<Record<string, unknown>>): Promise<Result<EdgeConfig, string[]>> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(bindings)) if (typeof value === 'string') env[name] = value;
  const problems: string[] = [];
  const raw = readConfigBinding(bindings[CONFIG_BINDING], problems);
  const keyText = env[STATE_KEYS_BINDING];
  let stateKeys: StateKey[] = [];
  if (!keyText) problems.push(`${STATE_KEYS_BINDING}: not set (a secret binding; every edge instance needs the same keys)`);
  else {
    try {
      stateKeys = await parseStateKeys(keyText);
    } catch (e) {
      problems.push(`${STATE_KEYS_BINDING}: ${(e as Error).message}`);
    }
  }
  if (raw === undefined) return err(problems);
  const parsed = parseConfig(withoutCore(raw, problems), env);
  if (!parsed.ok) return err([...problems, ...parsed.error.map((p) => `${CONFIG_BINDING}: ${p}`)]);
  problems.push(...edgeProblems(parsed.value).map((p) => `${CONFIG_BINDING}: ${p}`));
  return problems.length ? err(problems) : ok({ config: parsed.value, stateKeys });
}

/**
 * `raw` without `gateway.core: true`, which makes the Node gateway a session core: at the edge it is
 * refused by name (it would only draw the core's own complaints about the servers listed here).
 */
function withoutCore(raw: unknown, problems: string[]): unknown {
  const gateway = (raw as { gateway?: unknown } | null)?.gateway;
  if (gateway === null || typeof gateway !== 'object' || (gateway as { core?: unknown }).core !== true) return raw;
  problems.push(`${CONFIG_BINDING}: gateway.core: the edge is not a session core (the Node gateway is, with --core); remove it`);
  const { core: _core, ...rest } = gateway as Record<string, unknown>;
  return { ...(raw as Record<string, unknown>), gateway: rest };
}

function readConfigBinding(value: unknown, problems: string[]): unknown {
  if (value === undefined) {
    problems.push(`${CONFIG_BINDING}: not set (the gateway.json object: mcpServers and gateway)`);
    return undefined;
  }
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch (e) {
    // Where, never what: V8's message quotes the text around the error, which may hold a secret.
    const at = /at position (\d+)/.exec((e as Error).message)?.[1];
    problems.push(`${CONFIG_BINDING}: not valid JSON${at !== undefined ? ` (at position ${at})` : ''}`);
    return undefined;
  }
}

/** What a valid gateway.json may say that the edge cannot do. */
function edgeProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  for (const s of config.servers) {
    if (s.kind !== 'http')
      problems.push(
        `mcpServers.${s.name}: a stdio server cannot run at the edge; run it behind a session core (the Node gateway) and list the core here by URL`,
      );
    else if (s.protocol !== '2026-07-28')
      problems.push(
        `mcpServers.${s.name}: the edge reaches 2026-07-28 servers only; put this 2025-era server behind a session core and list the core here with "protocol": "2026-07-28"`,
      );
  }
  const g = config.gateway;
  if (g.cluster) problems.push('gateway.cluster: the edge needs no cluster (its state rides in requestState); remove it');
  if (g.admin) problems.push('gateway.admin: the edge has no admin listener; remove it');
  if (g.stateDir !== undefined) problems.push('gateway.stateDir: the edge keeps nothing on disk; remove it');
  if (g.rateLimits) problems.push('gateway.rateLimits: counted per isolate they would limit nothing; set them in the session core or the platform');
  if (g.proxyTools.enabled) problems.push('gateway.proxyTools: the proxy tools live in the session core (they keep state per workspace); enable them there');
  return problems;
}
