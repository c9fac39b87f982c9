/**
 * A Logger (log.ts) on the runtime's console, one JSON object per line (a Worker's logs are its
 * console's): level, message, bindings and fields. Below `level` nothing is written. Callers pass no
 * payloads, keys or tokens (log.ts), so nothing here filters them.
 */
import type { Logger } from '../log.js';

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const;
export type LogLevel = keyof typeof LEVELS;

export function isLogLevel(text: string | undefined): text is LogLevel {
  return text !== undefined && Object.hasOwn(LEVELS, text);
}

/** Writes through `write` (default: the console method of each level). */
export function consoleLogger(level: LogLevel = 'info', bindings: object = {}, write?: (level: LogLevel, line: string) => void): Logger {
  const min = LEVELS[level];
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
