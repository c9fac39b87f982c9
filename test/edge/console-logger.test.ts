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

  it('knows its levels', () => {
    expect(['debug', 'info', 'warn', 'error'].every(isLogLevel)).toBe(true);
    expect(isLogLevel('trace')).toBe(false);
    expect(isLogLevel('constructor')).toBe(false);
    expect(isLogLevel(undefined)).toBe(false);
  });
});
