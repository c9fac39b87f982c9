/**
 * How a legacy backend's sessions are started: every session of one backend is made with the same
 * options (server, roots, client info, liveness window, the backend's notifications), and with the
 * capability set it will serve. Traffic is counted where the backend is one process: every session of
 * an HTTP server shares one `Traffic`; a stdio session is a process of its own (liveness.ts).
 */
import type { ServerConfig } from '../../config.js';
import type { Logger } from '../../log.js';
import type { InputCapabilities } from '../input-capabilities.js';
import type { BackendCredentials } from './backend-credentials.js';
import { BackendSession, type ListKind } from './backend-session.js';
import { Traffic } from './liveness.js';
import { CONNECT_TIMEOUT_MS } from './port.js';
import { StartFailure } from './start-failure.js';
import { outsideTraces } from '../../util/tracing.js';

/**
 * What a session is for: `calls` (a pool's session) of a principal-isolated server holds a
 * session-level `roots/list` for the principal's next call when no roots are configured; a `catalog`
 * session (the primary, a list view) answers it with the configured roots.
 */
export type SessionPurpose = 'calls' | 'catalog';

/** Starts and connects a session declaring `caps`; rejects with `StartFailure` (its stderr included), or on abort. */
export type StartSession = (caps: InputCapabilities, signal: AbortSignal, purpose: SessionPurpose) => Promise<BackendSession>;

export interface SessionStarterOptions {
  readonly server: ServerConfig;
  readonly roots: readonly { uri: string; name?: string | undefined }[];
  readonly hungAfterMs: number;
  readonly clientInfo: { name: string; version: string };
  readonly logger: Logger;
  readonly onListChanged: (kind: ListKind, setup: boolean) => void;
  readonly onResourceUpdated: (uri: string) => void;
  /** An HTTP backend's bearer tokens (its `auth` entry). */
  readonly credentials?: BackendCredentials | undefined;
}

/** The session starter of one backend. */
export function createSessionStarter(options: SessionStarterOptions): StartSession {
  const { server } = options;
  const traffic = server.kind === 'http' ? new Traffic() : undefined;
  return async (caps, signal, purpose) => {
    const session = new BackendSession({
      server,
      capabilities: caps,
      roots: options.roots,
      sessionRoots: purpose === 'calls' && server.isolation === 'principal' ? 'defer' : 'config',
      settleMs: server.settleMs,
      traffic,
      hungAfterMs: options.hungAfterMs,
      clientInfo: options.clientInfo,
      logger: options.logger,
      onListChanged: options.onListChanged,
      onResourceUpdated: options.onResourceUpdated,
      credentials: options.credentials,
    });
    try {
      // Outside any request's trace: the session's process or streams outlive the call that started it,
      // and what they deliver later (another call's elicitation) must not be logged under this trace.
      await outsideTraces(() => session.connect(signal, CONNECT_TIMEOUT_MS));
    } catch (e) {
      throw new StartFailure(e, session.stderrTail);
    }
    return session;
  };
}
