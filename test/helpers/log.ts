/** A gateway logger whose lines a test can read (and wait for, with ./until.ts). */
import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A logger whose lines are kept (parsed) for assertions; `mixin` as pino's (main.ts gives `traceFields` when tracing is on). */
export function captureLog(
  level = 'info',
  mixin?: () => object,
): { lines: Record<string, unknown>[]; logger: ReturnType<typeof pino>; has(msg: string): boolean } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level, ...(mixin ? { mixin } : {}) }, sink), has: (msg) => lines.some((l) => l['msg'] === msg) };
}
