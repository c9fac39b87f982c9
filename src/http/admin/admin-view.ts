/**
 * What the admin listener is given (`AdminView`): a snapshot of what the gateway holds now, the metrics
 * exposition, and the operator's actions. Plain data: the HTTP layer never reaches into the engine.
 * Nothing here carries an input request's params, an answer, a requestState or a key.
 */

export interface AdminSnapshot {
  readonly instanceId: string;
  /** `serving`, `draining` or `closed`. */
  readonly state: string;
  /** Milliseconds since the epoch when the snapshot was taken. */
  readonly at: number;
  readonly backends: readonly AdminBackend[];
  readonly parked: readonly AdminParkedCall[];
  readonly tasks: readonly AdminTask[];
  /** Open legacy client sessions and listen streams. */
  readonly sessions: { readonly legacy: number; readonly listen: number };
  /** Cluster instances whose heartbeat stands (undefined: no cluster). */
  readonly instances?: readonly { readonly id: string; readonly url?: string | undefined; readonly self: boolean }[] | undefined;
  /** Sampling circuit breakers by state. */
  readonly breakers: Readonly<Record<string, number>>;
  /** One sample every few seconds, oldest first: the charts. */
  readonly history: readonly AdminSample[];
}

export interface AdminBackend {
  readonly name: string;
  readonly state: string;
  readonly failures: number;
  readonly lastError?: string | undefined;
  readonly pool?: { readonly sessions: number; readonly busy: number; readonly waiting: number; readonly connecting: number } | undefined;
}

export interface AdminParkedCall {
  readonly id: string;
  readonly principal: string;
  readonly backend: string;
  readonly method: string;
  readonly name?: string | undefined;
  readonly round: number;
  readonly ageMs: number;
}

export interface AdminTask {
  readonly id: string;
  readonly principal: string;
  readonly status: string;
  readonly backend: string;
  readonly ageMs: number;
}

export interface AdminSample {
  readonly at: number;
  /** Requests answered per second over the sample's interval. */
  readonly requestsPerSecond: number;
  /** Requests that ended in an error, per second. */
  readonly errorsPerSecond: number;
  readonly parked: number;
}

export interface AdminView {
  snapshot(): Promise<AdminSnapshot>;
  metrics(): Promise<{ readonly contentType: string; readonly text: string }>;
  /** Cancels a parked call: its retry gets `request_state_gone`. False when there is none such. */
  cancelCall(id: string): boolean;
  /** Cancels a task. False when there is none such. */
  cancelTask(id: string): boolean;
  /** Starts this instance's drain (new work goes elsewhere; parked calls may still be retried). */
  drain(): void;
}
