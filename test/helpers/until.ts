/**
 * Waiting in tests (issue 26): for a condition, never for a duration. The suite runs on a loaded
 * 2-core machine, where "sleep 300 ms and assume the call reached the backend" fails; a test polls
 * what it can observe (a fixture's stats, a log line, /readyz, the engine's counters, a stream's
 * messages) until it holds. The deadline is generous: it only bounds a test that would hang.
 */

import { readFileSync } from 'node:fs';

/** How often `until` looks again. */
const POLL_MS = 25;

/**
 * Polls `check` every 25 ms until it is true; throws `timed out waiting for <what>` after
 * `deadlineMs`. A check that throws ends the wait with its error (an assertion inside it fails the
 * test at once): a check that may fail on the way, such as a fetch to a server not listening yet,
 * says so itself (`.catch(() => false)`).
 */
export async function until(what: string, check: () => boolean | Promise<boolean>, deadlineMs = 30_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/**
 * A negative check's wait: lets `ms` pass so that something that should NOT happen would have had
 * the chance to (a message that must not arrive, a call that must not reach the backend). Only for
 * assertions of absence, where there is no condition to wait for; prefer a positive barrier (a later
 * marker that is answered after the earlier thing would have been) where there is one. A loaded
 * machine can only make such a check pass wrongly, never fail wrongly.
 */
export function quietFor(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves after `ms`: a pause between attempts of a loop that retries or paces itself (not a wait for anything). */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * 'settled' once `work` settles (either way), 'pending' if it has not after `ms`: a test of something
 * that must not wait for ever fails with a clear value instead of hanging until its own timeout.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<'settled' | 'pending'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  try {
    return await Promise.race([work.then(() => 'settled' as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** True once the file at `path` exists and contains `text` (a log a fixture appends to). */
export function fileHas(path: string, text: string): boolean {
  try {
    return readFileSync(path, 'utf8').includes(text);
  } catch {
    return false;
  }
}
