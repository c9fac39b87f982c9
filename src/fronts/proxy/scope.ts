/**
 * One scope of the proxy tools' state (seed 000 "Four categories of state"): a principal by default, a
 * workspace a tool minted, or a legacy client session. It owns its events (category 1), its log lines
 * (category 2), the backend notifications it has not read, and the work it started: the calls behind
 * `execute_tool`, `get_prompt` and `read_resource`, whose tasks are category 3 and whose outstanding
 * input requests are category 4.
 */
import type { LoggingLevel } from '@modelcontextprotocol/server';
import type { Call } from '../../core/calls/call.js';
import { LogBuffer } from './log-buffer.js';
import { ScopeEvents } from './scope-events.js';

export interface ScopeLimits {
  readonly maxEvents: number;
  readonly maxLogs: number;
  readonly maxNotifications: number;
}

/** A backend call a scope started. */
export interface Work {
  /** Stable for the work's life (the first call's id): request ids are made from it. */
  readonly id: string;
  /** The backend call (a stateless backend's call is replaced by the one that carries it on). */
  call: Call;
  /** True when a stateless backend's `input_required` is carried on by a new call (the work goes on). */
  readonly resumable: boolean;
  readonly server: string;
  /** The backend's tool or prompt name, or the resource URI. */
  readonly name: string;
  readonly method: string;
  /** Backend log lines at or above this level are `notification` events too (all of them go to the log ring). */
  readonly logEventLevel: LoggingLevel;
  /** Set once the call became a task. */
  taskId?: string;
  /** Input keys being asked of the client right now as MRTR rounds (not pending client actions). */
  readonly forwarded: Set<string>;
}

export interface BufferedNotification {
  readonly server: string;
  readonly timestamp: string;
  readonly method: string;
  readonly params?: Record<string, unknown> | undefined;
  /** The task whose call it came on, when it came on one that became a task. */
  readonly taskId?: string | undefined;
}

export class Scope {
  readonly key: string;
  readonly principal: string;
  /** The workspace or session inside the principal (undefined: the principal's own scope). */
  readonly sub: string | undefined;
  readonly events: ScopeEvents;
  readonly logs: LogBuffer;
  readonly work = new Map<string, Work>();
  /** The tasks of this scope (running and finished, while the registry keeps them): id → what runs. */
  readonly tasks = new Map<string, { server: string; toolName: string }>();
  readonly #notifications: BufferedNotification[] = [];
  readonly #maxNotifications: number;
  lastUsed = Date.now();

  constructor(key: string, principal: string, sub: string | undefined, limits: ScopeLimits, onEvict: (count: number) => void) {
    this.key = key;
    this.principal = principal;
    this.sub = sub;
    this.events = new ScopeEvents(limits.maxEvents, onEvict);
    this.logs = new LogBuffer(limits.maxLogs);
    this.#maxNotifications = limits.maxNotifications;
  }

  /**
   * A backend notification (a list change for everyone; progress, a resource update or a log line at or
   * above the work's level for the scope whose call it came on): kept for `get_notifications`, and an
   * event (`replaces`: superseding an undelivered one of that key, see ScopeEvents.add).
   */
  notify(server: string, method: string, params?: Record<string, unknown>, taskId?: string, replaces?: string): void {
    const extra = { ...(params ? { params } : {}), ...(taskId !== undefined ? { taskId } : {}) };
    const n: BufferedNotification = { server, timestamp: new Date().toISOString(), method, ...extra };
    this.#notifications.push(n);
    if (this.#notifications.length > this.#maxNotifications) this.#notifications.shift();
    this.events.add('notification', server, { method, ...extra }, Date.now(), replaces);
  }

  /** The notifications not read yet (read and cleared, as the seed's `get_notifications`). */
  takeNotifications(server?: string): BufferedNotification[] {
    const out: BufferedNotification[] = [];
    for (let i = 0; i < this.#notifications.length;) {
      const n = this.#notifications[i]!;
      if (server === undefined || n.server === server) {
        out.push(n);
        this.#notifications.splice(i, 1);
      } else i++;
    }
    return out;
  }

  /** True when nothing of the scope is running. */
  get idle(): boolean {
    return this.work.size === 0;
  }
}
