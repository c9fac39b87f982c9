// @ts-check
/**
 * Preloaded into a gateway the bench starts (`--import`), driven over the IPC channel. Plain JavaScript,
 * so the measured gateway runs without a TypeScript loader (whose worker thread would add to its RSS):
 *   `memory`                  → the process's memory figures after a full garbage collection (with `--expose-gc`);
 *   `profile-start`           → starts the V8 CPU profiler (so start-up and warm-up stay out of the profile);
 *   `profile-stop:<file>`     → stops it and writes the `.cpuprofile` to `<file>`;
 *   `heap-snapshot:<file>`    → writes a heap snapshot to `<file>` (for DevTools' Memory tab);
 *   `alloc-start`             → starts V8's sampling heap profiler, keeping what garbage collection freed
 *                               (so the profile shows every allocation, not only what is still live);
 *   `alloc-stop:<file>`       → stops it and writes the `.heapprofile` to `<file>`.
 * Every answer is `{ ok: true, ... }` or `{ ok: false, error }`. Lets go of the channel on SIGTERM so
 * shutdown stays normal; when the bench goes away without stopping it (its end of the channel closed),
 * stops the gateway with SIGTERM.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { writeHeapSnapshot } from 'node:v8';

/** @type {Session | undefined} */
let session;

/** A new inspector session, connected; refused while a profiler runs (one at a time). */
function connected() {
  if (session) throw new Error('a profiler is already running: stop it first');
  const s = new Session();
  s.connect();
  return s;
}

/**
 * Writes `profile` to `file` and ends the session.
 * @param {string} file
 * @param {unknown} profile
 * @returns {Record<string, unknown>}
 */
function written(file, profile) {
  writeFileSync(file, JSON.stringify(profile));
  session?.disconnect();
  session = undefined;
  return {};
}

/**
 * @param {string} message
 * @returns {Promise<Record<string, unknown>>}
 */
async function answer(message) {
  if (message === 'memory') {
    /** @type {{ gc?: () => void }} */ (globalThis).gc?.();
    return { memory: process.memoryUsage() };
  }
  if (message === 'profile-start') {
    session = connected();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    return {};
  }
  if (message.startsWith('profile-stop:') && session) {
    const { profile } = await session.post('Profiler.stop');
    return written(message.slice('profile-stop:'.length), profile);
  }
  if (message === 'alloc-start') {
    session = connected();
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return {};
  }
  if (message.startsWith('alloc-stop:') && session) {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    return written(message.slice('alloc-stop:'.length), profile);
  }
  if (message.startsWith('heap-snapshot:')) {
    writeHeapSnapshot(message.slice('heap-snapshot:'.length));
    return {};
  }
  throw new Error(`unknown probe message ${message}`);
}

process.on('message', (message) => {
  answer(String(message)).then(
    (r) => process.send?.({ ok: true, ...r }),
    (e) => process.send?.({ ok: false, error: String(e) }),
  );
});
let stopping = false;
process.once('SIGTERM', () => {
  stopping = true;
  // Not on a channel already closed: that throws (ERR_IPC_DISCONNECTED) before the gateway's own handler runs.
  if (process.connected) process.disconnect?.();
});
// The bench itself went away (a crash, SIGKILL): its channel closed. The gateway stops as on SIGTERM
// (it ends its backends), rather than running on, orphaned, with its backend processes.
process.once('disconnect', () => {
  if (stopping) return;
  stopping = true;
  process.kill(process.pid, 'SIGTERM');
});
