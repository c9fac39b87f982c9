/**
 * A Logger (log.ts) on the runtime's console, one JSON object per line (a Worker's logs are its
 * console's): level, message, bindings and fields. Below `level` nothing is written. Callers pass no
 * payloads, keys or tokens (log.ts), so nothing here filters them.
 */
import type { Logger } from '../log.js';

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;
export type LogLevel = keyof typeof LEVELS;
/** The `LOG_LEVEL` names the Node gateway takes (pino's): below `trace` nothing is filtered, `silent` writes nothing. */
const THRESHOLDS = { trace: 10, ...LEVELS, fatal: 60, silent: Infinity } as const;
export type LogThreshold = keyof typeof THRESHOLDS;

export function isLogLevel(text: unknown): text is LogThreshold {
  return typeof text === 'string' && Object.hasOwn(THRESHOLDS, text);
}

/** Writes through `write` (default: the console method of each level). */
export function consoleLogger(level: LogThreshold = 'info', bindings: object = {}, write?: (level: LogLevel, line: string) => void): Logger {
  const min = THRESHOLDS[level];
  const out =
    write ??
    ((l: LogLevel, line: string) => {
      if (l === 'error') console.error(line);
      else if (l === 'warn') console.warn(line);
      else console.log(line);
    });
  const at =
    (l: LogLevel) =>
    (obj: object, msg?: string): void => {
      if (LEVELS[l] < min) return;
      out(l, JSON.stringify({ level: l, time: Date.now(), ...bindings, ...obj, ...(msg !== undefined ? { msg } : {}) }));
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => consoleLogger(level, { ...bindings, ...more }, out),
  };
}
