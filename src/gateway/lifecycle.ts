/**
 * Where the gateway is in its life (serving → draining → closed), and the requests being handled right
 * now (a list, a route being resolved, an answer streaming back from another instance): a drain waits
 * for them as well as for live calls.
 */
export interface Lifecycle {
  readonly state: 'serving' | 'draining' | 'closed';
  /** True once the gateway stops taking new work (draining, then closed). */
  stopping(): boolean;
  /** From serving to draining; false when it was not serving. */
  startDraining(): boolean;
  markClosed(): void;
  /** Requests being handled right now. */
  readonly inFlight: number;
  /** Counts one request in until the returned function is called (once; later calls do nothing). */
  enter(): () => void;
}

export function createLifecycle(): Lifecycle {
  let state: Lifecycle['state'] = 'serving';
  let inFlight = 0;
  return {
    get state() {
      return state;
    },
    stopping: () => state !== 'serving',
    startDraining() {
      if (state !== 'serving') return false;
      state = 'draining';
      return true;
    },
    markClosed() {
      state = 'closed';
    },
    get inFlight() {
      return inFlight;
    },
    enter() {
      inFlight++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        inFlight--;
      };
    },
  };
}
