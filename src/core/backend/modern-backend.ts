/**
 * A backend that speaks MCP 2026-07-28 (config `"protocol": "2026-07-28"`). It needs no session: each
 * front request is forwarded as one stateless request (v2 SDK client pinned to 2026-07-28) with the
 * caller's per-request capabilities. Its `input_required` results pass through to the client; the
 * gateway wraps the backend's requestState inside its own, so a retry is routed back to it.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { GatewaySettings, HttpServerConfig } from '../../config.js';
import { GatewayError, isJsonRpcError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { toProgressUpdate, type ProgressUpdate } from '../calls/call-run.js';
import { type CatalogBackend, type CatalogKind, LIST_METHODS, fetchAllPages } from './catalog-backend.js';
import { ListCache } from './list-cache.js';

const CAPS_META = 'io.modelcontextprotocol/clientCapabilities';
const LOG_LEVEL_META = 'io.modelcontextprotocol/logLevel';
const CONNECT_TIMEOUT_MS = 20_000;
const LIST_TIMEOUT_MS = 30_000;

export interface ModernForward {
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly capabilities: Record<string, unknown>;
  readonly logLevel?: string | undefined;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly onprogress?: ((p: ProgressUpdate) => void) | undefined;
}

export class ModernBackend implements CatalogBackend {
  readonly era = 'modern' as const;
  readonly name: string;
  readonly server: HttpServerConfig;
  readonly #log: Logger;
  readonly #clientInfo: { name: string; version: string };
  readonly #lists: ListCache;
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #closed = false;

  constructor(opts: { server: HttpServerConfig; settings: Readonly<GatewaySettings>; clientInfo: { name: string; version: string }; logger: Logger }) {
    this.server = opts.server;
    this.name = opts.server.name;
    this.#log = opts.logger.child({ backend: this.name });
    this.#clientInfo = opts.clientInfo;
    this.#lists = new ListCache(opts.settings.cacheTtlMs, (kind) => this.#fetchList(kind));
  }

  get up(): boolean {
    return this.#client !== undefined;
  }

  async start(): Promise<void> {
    try {
      await this.#connect();
    } catch (e) {
      this.#log.warn({ err: (e as Error).message }, 'backend unavailable at start; will retry on use');
    }
  }

  async capabilities(): Promise<Record<string, unknown> | undefined> {
    try {
      return (await this.#connect()).getServerCapabilities() as Record<string, unknown> | undefined;
    } catch {
      return undefined;
    }
  }

  list(kind: CatalogKind, { fresh = false }: { fresh?: boolean } = {}): Promise<Record<string, unknown>[]> {
    return this.#lists.get(kind, fresh);
  }

  cachedList(kind: CatalogKind): Record<string, unknown>[] | undefined {
    return this.#lists.cached(kind);
  }

  async requestOnPrimary(method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    return this.forward({ method, params: params ?? {}, capabilities: {}, timeoutMs: LIST_TIMEOUT_MS, signal });
  }

  /** Forwards one request; an `input_required` result comes back as is (with the backend's requestState). */
  async forward(req: ModernForward): Promise<Record<string, unknown>> {
    const client = await this.#connect();
    const meta: Record<string, unknown> = { ...((req.params['_meta'] as Record<string, unknown> | undefined) ?? {}), [CAPS_META]: req.capabilities };
    if (req.logLevel !== undefined) meta[LOG_LEVEL_META] = req.logLevel;
    const onprogress = req.onprogress;
    try {
      const result = await client.request(
        { method: req.method, params: { ...req.params, _meta: meta } } as never,
        {
          allowInputRequired: true,
          signal: req.signal,
          timeout: req.timeoutMs,
          ...(onprogress
            ? { onprogress: (p: { progress: number; total?: number | undefined; message?: string | undefined }) => onprogress(toProgressUpdate(p)) }
            : {}),
        } as never,
      );
      return result as Record<string, unknown>;
    } catch (e) {
      if (isJsonRpcError(e) || req.signal.aborted) throw e;
      this.#drop(client);
      throw new GatewayError('backend_unavailable', this.name, { cause: e });
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => undefined);
  }

  async #fetchList(kind: CatalogKind): Promise<Record<string, unknown>[]> {
    const caps = await this.capabilities();
    if (!caps?.[LIST_METHODS[kind].capability]) return [];
    const signal = AbortSignal.timeout(LIST_TIMEOUT_MS);
    return fetchAllPages(kind, (method, params) => this.forward({ method, params: params ?? {}, capabilities: {}, timeoutMs: LIST_TIMEOUT_MS, signal }));
  }

  #connect(): Promise<Client> {
    if (this.#closed) return Promise.reject(new GatewayError('gateway_closing'));
    if (this.#client) return Promise.resolve(this.#client);
    this.#connecting ??= (async () => {
      const client = new Client({ ...this.#clientInfo }, { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } });
      try {
        await client.connect(new StreamableHTTPClientTransport(new URL(this.server.url), { requestInit: { headers: this.server.headers } }), {
          signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS),
        } as never);
      } catch (e) {
        throw new GatewayError('backend_unavailable', this.name, { cause: e });
      } finally {
        this.#connecting = undefined;
      }
      client.onclose = () => this.#drop(client);
      this.#client = client;
      this.#lists.invalidate();
      this.#log.info({}, 'backend connected (2026-07-28, stateless)');
      return client;
    })();
    return this.#connecting;
  }

  #drop(client: Client): void {
    if (this.#client === client) this.#client = undefined;
    void client.close().catch(() => undefined);
  }
}
