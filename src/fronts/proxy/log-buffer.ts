/**
 * The log lines backends sent to one scope (a legacy client session; a proxy-tools workspace), kept for
 * reading on demand (seed 000, "Logs (On-Demand, Ring Buffer)"): a fixed-size ring, oldest out first,
 * every level kept whatever the client asked to be sent, filtered when read.
 */
import { LoggingLevelSchema } from '@modelcontextprotocol/core';
import type { LoggingLevel } from '@modelcontextprotocol/server';

export interface LogEntry {
  /** ISO 8601. */
  readonly timestamp: string;
  /** The backend that sent it. */
  readonly server: string;
  readonly level: LoggingLevel;
  readonly logger?: string;
  readonly data: unknown;
}

export interface LogQuery {
  readonly server?: string | undefined;
  /** Lines at this level and above. */
  readonly level?: LoggingLevel | undefined;
  /** The newest this many (after filtering). */
  readonly limit?: number | undefined;
}

const LEVELS = LoggingLevelSchema.options;

export class LogBuffer {
  readonly #max: number;
  readonly #ring: (LogEntry | undefined)[];
  #next = 0;
  #size = 0;
  #dropped = 0;

  constructor(max = 1000) {
    this.#max = Math.max(1, Math.floor(max));
    this.#ring = new Array<LogEntry | undefined>(this.#max);
  }

  /** Lines held. */
  get size(): number {
    return this.#size;
  }
  /** Lines rotated out so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Keeps one `notifications/message` params object from `server`. */
  push(server: string, level: LoggingLevel, params: Record<string, unknown>, now = Date.now()): void {
    const logger = typeof params['logger'] === 'string' ? params['logger'] : undefined;
    const entry: LogEntry = { timestamp: new Date(now).toISOString(), server, level, ...(logger !== undefined ? { logger } : {}), data: params['data'] };
    if (this.#size === this.#max) this.#dropped += 1;
    else this.#size += 1;
    this.#ring[this.#next] = entry;
    this.#next = (this.#next + 1) % this.#max;
  }

  /** Matching lines, oldest first. */
  read(query: LogQuery = {}): LogEntry[] {
    const min = query.level !== undefined ? LEVELS.indexOf(query.level) : 0;
    const out: LogEntry[] = [];
    for (let i = 0; i < this.#size; i++) {
      const entry = this.#ring[(this.#next - this.#size + i + this.#max) % this.#max]!;
      if (query.server !== undefined && entry.server !== query.server) continue;
      if (LEVELS.indexOf(entry.level) < min) continue;
      out.push(entry);
    }
    const limit = query.limit;
    return limit !== undefined && limit >= 0 && out.length > limit ? out.slice(out.length - limit) : out;
  }
}
