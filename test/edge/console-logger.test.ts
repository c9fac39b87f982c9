/** The edge handler's logger: JSON lines at or above its level, children carrying their bindings. */
import { describe, expect, it } from 'vitest';
import { consoleLogger, isLogLevel, type LogLevel } from '../../src/edge/console-logger.js';

describe('consoleLogger', () => {
  it('writes one JSON object per line at or above its level, with the bindings of its parents', () => {
    const lines: [LogLevel, Record<string, unknown>][] = [];
    const log = consoleLogger('info', { app: 'edge' }, (level, line) => lines.push([level, JSON.parse(line) as Record<string, unknown>]));
    log.debug({ a: 1 }, 'hidden');
    log.info({ a: 2 }, 'shown');
    log.child({ backend: 'core' }).warn({ err: 'x' });
    expect(lines.map(([level, o]) => [level, { ...o, time: 0 }])).toEqual([
      ['info', { level: 'info', time: 0, app: 'edge', a: 2, msg: 'shown' }],
      ['warn', { level: 'warn', time: 0, app: 'edge', backend: 'core', err: 'x' }],
    ]);
  });

  it("takes the Node gateway's LOG_LEVEL names, not a number or anything else", () => {
    expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].every(isLogLevel)).toBe(true);
    expect(isLogLevel(30)).toBe(false);
    expect(isLogLevel('constructor')).toBe(false);
    expect(isLogLevel(undefined)).toBe(false);
  });

  it('writes nothing at silent, nor at fatal (the edge writes no fatal lines); trace lets debug through', () => {
    const lines: string[] = [];
    for (const level of ['silent', 'fatal'] as const) {
      const log = consoleLogger(level, {}, (l) => lines.push(`${level}:${l}`));
      log.warn({}, 'w');
      log.error({}, 'e');
    }
    expect(lines).toEqual([]);
    const trace: string[] = [];
    consoleLogger('trace', {}, (l) => trace.push(l)).debug({}, 'd');
    expect(trace).toEqual(['debug']);
  });
});
