/** The fetch of a 2024-11-05 (HTTP+SSE) backend: one transport signal shared by every request, in a process of its own (what its stderr shows). */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeArgs } from '../../helpers/built.js';

const PROBE = fileURLToPath(new URL('../../fixtures/shared-signal-probe.ts', import.meta.url));

async function stderrOf(mode: 'shared' | 'plain'): Promise<string> {
  const child = spawn(process.execPath, [...nodeArgs(PROBE), mode], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  expect(code, err).toBe(0);
  return err;
}

describe('sharedSignalFetch', () => {
  it('prints no MaxListenersExceededWarning past 1,500 requests on one signal, where plain fetch does (undici keeps a listener per request until GC)', async () => {
    expect(await stderrOf('plain')).toContain('MaxListenersExceededWarning');
    expect(await stderrOf('shared')).not.toContain('MaxListenersExceededWarning');
  });
});
