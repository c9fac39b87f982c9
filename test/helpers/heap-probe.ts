/**
 * Runs a heap probe (test/fixtures/*-heap-probe.ts) in a process of its own with `--expose-gc`, and
 * resolves with the figure it prints on its `HEAP {…}` line.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { nodeArgs } from './built.js';

export function runHeapProbe<T>(probe: string, env: Record<string, string>): Promise<T> {
  const child = spawn(process.execPath, ['--expose-gc', ...nodeArgs(probe)], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let figure: T | undefined;
    createInterface({ input: child.stdout! }).on('line', (l) => {
      if (l.startsWith('HEAP ')) figure = JSON.parse(l.slice(5)) as T;
    });
    child.once('exit', (code) => (figure ? resolve(figure) : reject(new Error(`the probe exited ${code} without a figure`))));
  });
}
