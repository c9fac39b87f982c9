/**
 * Liveness of a legacy backend without false deaths: a backend is hung only when it has been silent on
 * every exchange — no response, no notification, no request of its own, on any of its sessions — for
 * `hungAfterMs`, not because one ping was late while it was answering calls.
 *
 * Traffic is counted where the backend is one process: every session of an HTTP server shares one
 * `Traffic`; a stdio session is a process of its own and has its own.
 */

/** When a backend (or one stdio process) last sent anything. */
export class Traffic {
  #at = Date.now();

  /** The time of the last message received. */
  get at(): number {
    return this.#at;
  }

  /** A message arrived. */
  seen(): void {
    this.#at = Date.now();
  }
}

/** What one ping found: an answer, no answer before its deadline, or a closed session / failed transport. */
export type PingOutcome = 'answered' | 'silent' | 'gone';

/** `alive`: answered, or sent something within the window; `hung`: silent on every exchange for the window; `gone`: the session is dead. */
export type Liveness = 'alive' | 'hung' | 'gone';

/**
 * Pings with a deadline of `silenceMs` and judges: an answer, or any traffic within the last
 * `silenceMs`, is alive; a closed session or a failed transport (connection refused or reset) is gone
 * at once; otherwise the backend has been silent for the whole window and is hung.
 */
export async function judgeLiveness(ping: (timeoutMs: number) => Promise<PingOutcome>, traffic: Traffic, silenceMs: number): Promise<Liveness> {
  const outcome = await ping(silenceMs);
  if (outcome === 'answered') return 'alive';
  if (outcome === 'gone') return 'gone';
  return Date.now() - traffic.at < silenceMs ? 'alive' : 'hung';
}
