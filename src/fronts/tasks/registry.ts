/**
 * The tasks of this instance: each a handle on one call of the engine (ARCHITECTURE.md "Task").
 *
 * A task is registered before its id is handed out (a `tasks/get` right after `CreateTaskResult` finds
 * it), belongs to the principal that created it (anyone else is told it does not exist), counts
 * against the per-principal and total task quotas, runs for at most `ttlMs` (then its call is
 * cancelled) and stays readable for `retentionMs` after it ends, then is forgotten. Its status is read
 * from the call without consuming anything; input goes in through the call's `answer`.
 *
 * Task ids are unguessable (128 random bits) and name the instance that holds the call and the run
 * that made it (`<instance>~<run>.<random>`): a balancer in front of several instances can route
 * `tasks/*` by the `Mcp-Name` header alone, and a task lost to a restart is told apart (`notFound`).
 *
 * Finished tasks are kept for reading at most 4 × the running bounds (per principal and in total); past
 * that the oldest finished one is forgotten before its time, so memory stays bounded.
 */
import type { Quotas } from '../../cluster/quotas.js';
import { ownedId, ownerOfId } from '../../cluster/owned-ids.js';
import type { TaskStore } from '../../cluster/task-store.js';
import { FinishedTasks } from './finished-tasks.js';
import { boundInputWaits } from './input-deadline.js';
import type { Call, PendingInput } from '../../core/calls/call.js';
import { responseProblem, type InputResponseMap } from '../../core/calls/input-responses.js';
import { GatewayError, invalidParams, toWireError, type ProtocolError, type WireErrorObject } from '../../errors.js';
import { linkedController, wakeOrAbort } from '../../util/abort.js';
import { type Result, ok, err } from '../../util/result.js';
import { base64url } from '../../util/canonical-json.js';
import { isTerminal, type TaskSnapshot, type TaskStatus } from '../../protocol/rev-2026-07-28/tasks.js';
import { background, type BackgroundLog } from '../../util/background.js';
import type { Clock, ClockTimer } from '../../util/clock.js';

export interface TaskSettings {
  /** How long a task may run before its call is cancelled. */
  readonly ttlMs: number;
  /** How long a finished task stays readable. */
  readonly retentionMs: number;
  readonly pollIntervalMs: number;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
}

export interface TaskRegistryDeps {
  readonly instanceId: string;
  readonly clock: Clock;
  readonly quotas: Quotas;
  readonly settings: TaskSettings;
  /** Cluster mode: where each task is written as it changes, so any instance can read it (cluster/task-store.ts). */
  readonly store?: TaskStore | undefined;
  /** Where a failed write is reported (the task itself goes on). */
  readonly onStoreError?: ((e: Error) => void) | undefined;
  /** Where a failed background step (a quota unit given back) is reported. */
  readonly log?: BackgroundLog | undefined;
}

/**
 * Carries a task on after a stateless (2026-07-28) backend answered its call with `input_required`:
 * a new call of the same request with the answers and the backend's requestState.
 */
export type ContinueCall = (inputResponses: InputResponseMap, requestState: string | undefined) => Promise<Call>;

/** How a task is made of a call. */
export interface CreateTask {
  /** Its lifetime, when the client asked for less than the configured one. */
  readonly ttlMs?: number | undefined;
  /** How a stateless backend's input round carries it on. */
  readonly resume?: ContinueCall | undefined;
  /**
   * The longest its call may wait for its client's answer (its server's `parkTimeoutMs`): then it
   * fails with `input_timeout` and frees its backend session (input-deadline.ts). None: the task's ttl.
   */
  readonly inputTimeoutMs?: number | undefined;
}

/** One task: the call it is a handle on (the latest, when a stateless backend needed input), and its bookkeeping. */
export interface Task {
  readonly id: string;
  readonly principal: string;
  readonly call: Call;
  readonly createdAt: number;
}

interface Entry extends Task {
  call: Call;
  readonly resume: ContinueCall | undefined;
  /** Answers gathered for the stateless backend's input round, until all its keys are answered. */
  answers: Record<string, Record<string, unknown>>;
  /** Set when the task ended without its call (cancelled or expired while waiting for a stateless round's answers). */
  stopped: { status: 'cancelled' | 'failed'; error: WireErrorObject } | undefined;
  readonly waiters: Set<() => void>;
  /** True once its running-task quota was given back. */
  released: boolean;
  /** The task's lifetime as promised to the client. */
  readonly ttlMs: number;
  /** When the task is forgotten (the later of its ttl and the retention after its end). */
  deleteAt: number;
  timer: ClockTimer;
  readonly quota: readonly string[];
  /** What the last snapshot showed, to move `lastUpdatedAt` only when something changed. */
  seen: string;
  lastUpdatedAt: number;
  /** Stops writing the task to the store (it was forgotten). */
  readonly persisting: AbortController;
  /** How many times it was written to the store (readers drop an older write that arrives late). */
  revision: number;
  /** Its last write to the store failed (Redis away): what the store holds is older than what it shows. */
  unwritten: boolean;
  /** When a client last read it (`read`) and saw it still running; undefined: never. */
  readAt: number | undefined;
  /** A client read it ended (`read`). */
  endSeen: boolean;
}

/** What a client can see change in a task: its status and the keys of what it waits for. */
export function visibleState(t: Pick<TaskSnapshot, 'status' | 'inputRequests'>): string {
  return `${t.status}|${Object.keys(t.inputRequests ?? {}).join(',')}`;
}

/**
 * For how many poll intervals (`pollIntervalMs`, what the gateway asks clients to poll at) after its
 * last read a task counts as polled: a client that stopped polling does not hold a drain.
 */
const POLLING_INTERVALS = 3;

/** The part of a task id after its instance: a run's mark (6 bytes) and 16 random bytes, base64url. */
const RUN_ID = /^[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{22}$/;

/** The instance a task id names (undefined when it is not one of ours). */
export const instanceOfTaskId = ownerOfId;

export class TaskRegistry {
  readonly #deps: TaskRegistryDeps;
  readonly #tasks = new Map<string, Entry>();
  /** Finished tasks still held. */
  readonly #finished: FinishedTasks<Entry>;
  #closed = false;
  /** This run's mark in the ids it hands out (`<instance>~<run>.<random>`): an id an earlier run made is told apart. */
  readonly #run = base64url(crypto.getRandomValues(new Uint8Array(6)));

  constructor(deps: TaskRegistryDeps) {
    this.#deps = deps;
    this.#finished = new FinishedTasks(deps.settings.maxPerPrincipal, deps.settings.maxTotal);
  }

  /** Every task held, running or retained (for the admin page; a principal reads its own through `get`). */
  list(): Task[] {
    return [...this.#tasks.values()];
  }

  /** Tasks held (running and retained). */
  get size(): number {
    return this.#tasks.size;
  }

  /**
   * Makes `call` a task of `principal`. Throws `task_limit` when the principal (or the gateway) holds
   * too many; the call is then left as it is (the caller decides what becomes of it).
   */
  async create(call: Call, principal: string, opts: CreateTask = {}): Promise<Task> {
    if (this.#closed) throw new GatewayError('gateway_closing');
    const { settings, clock, quotas } = this.#deps;
    const quota = [`tasks:${principal}`, 'tasks:*'];
    const held = await quotas.acquire([
      { key: quota[0]!, limit: settings.maxPerPrincipal },
      { key: quota[1]!, limit: settings.maxTotal },
    ]);
    if (!held) throw new GatewayError('task_limit');
    if (this.#closed) {
      await quotas.release(quota);
      throw new GatewayError('gateway_closing');
    }
    const id = ownedId(this.#deps.instanceId, `${this.#run}.${base64url(crypto.getRandomValues(new Uint8Array(16)))}`);
    const createdAt = clock.now();
    // A client may ask for less than the configured lifetime (the draft's `task.ttl`), never for more.
    const ttlMs = Math.max(1, Math.min(settings.ttlMs, opts.ttlMs ?? settings.ttlMs));
    const entry: Entry = {
      id,
      principal,
      call,
      createdAt,
      ttlMs,
      deleteAt: createdAt + ttlMs,
      timer: clock.schedule(() => this.#expire(entry), ttlMs),
      quota,
      seen: '',
      lastUpdatedAt: createdAt,
      resume: opts.resume,
      answers: {},
      stopped: undefined,
      waiters: new Set(),
      released: false,
      persisting: new AbortController(),
      revision: 0,
      unwritten: false,
      readAt: undefined,
      endSeen: false,
    };
    this.#tasks.set(id, entry);
    call.onDone(() => this.#ended(entry));
    // None when no shorter than the ttl, which ends the call first (and a timer past 2^31 - 1 ms would fire at once).
    if (opts.inputTimeoutMs !== undefined && opts.inputTimeoutMs < ttlMs)
      background("bound a task's waits for input", boundInputWaits(call, opts.inputTimeoutMs, clock, entry.persisting.signal), this.#deps.log);
    const { store } = this.#deps;
    if (store) background('write a task to the cluster store', () => this.#persist(entry, store), this.#deps.log);
    return entry;
  }

  /** The stateless backend's input round the task waits on (its call ended with `input_required`), if any. */
  #round(entry: Entry): { inputRequests: Record<string, unknown>; requestState?: string | undefined } | undefined {
    const outcome = entry.call.outcome;
    if (entry.stopped || !entry.resume || outcome?.kind !== 'done' || outcome.outcome.kind !== 'input_required') return undefined;
    return outcome.outcome;
  }

  /** What the task waits for, under the keys `tasks/update` answers. */
  waiting(task: Task): PendingInput[] {
    const entry = this.#tasks.get(task.id);
    if (!entry) return [];
    const round = this.#round(entry);
    if (!round) return entry.call.pending;
    return Object.entries(round.inputRequests)
      .filter(([key]) => !Object.hasOwn(entry.answers, key))
      .map(([key, r]) => ({
        key,
        method: String((r as { method?: unknown }).method),
        params: ((r as { params?: unknown }).params ?? {}) as Record<string, unknown>,
      }));
  }

  /** Checks answers to what the task waits for (other keys must already be filtered out). */
  checkAnswers(task: Task, responses: InputResponseMap): Result<void, string> {
    for (const p of this.waiting(task)) {
      const value = responses[p.key];
      const problem = value !== undefined ? responseProblem(p.method, p.params, value) : undefined;
      if (problem) return err(`inputResponses.${p.key} is not a valid ${p.method} result: ${problem}`);
    }
    return ok(undefined);
  }

  /**
   * Answers what the task waits for. A live call gets them at once; a stateless backend's round
   * collects them and, once every key is answered, carries the task on with a new call.
   */
  answer(task: Task, responses: InputResponseMap): void {
    const entry = this.#tasks.get(task.id);
    if (!entry) return;
    const round = this.#round(entry);
    if (!round) {
      entry.call.answer(responses);
      return;
    }
    const wanted = new Set(this.waiting(entry).map((p) => p.key));
    for (const [key, value] of Object.entries(responses)) if (wanted.has(key)) entry.answers[key] = value;
    this.#wake(entry);
    if (Object.keys(round.inputRequests).every((key) => Object.hasOwn(entry.answers, key))) {
      background('carry a task on with its answers', () => this.#continue(entry, round.requestState), this.#deps.log);
    }
  }

  async #continue(entry: Entry, requestState: string | undefined): Promise<void> {
    const answers = entry.answers;
    entry.answers = {};
    try {
      const next = await entry.resume!(answers, requestState);
      if (this.#tasks.get(entry.id) !== entry || entry.stopped) {
        next.cancel(new GatewayError('cancelled', 'the task ended while it was carried on'));
        return;
      }
      entry.call = next;
      next.onDone(() => this.#ended(entry));
    } catch (e) {
      entry.stopped = { status: 'failed', error: toWireError(e) };
      this.#ended(entry);
    }
    this.#wake(entry);
  }

  /** Resolves at the task's next change (its call's, or a new call carrying it on); rejects when `signal` aborts. */
  async nextChange(task: Task, signal: AbortSignal): Promise<void> {
    const entry = this.#tasks.get(task.id);
    if (!entry) return wakeOrAbort(new Set(), signal); // forgotten: nothing changes any more
    const link = linkedController(signal);
    try {
      const waits = [wakeOrAbort(entry.waiters, link.controller.signal)];
      if (!entry.call.done) waits.push(entry.call.nextChange(link.controller.signal));
      await Promise.race(waits);
    } finally {
      // The wait that lost is released (its waiter removed) by the abort.
      link.controller.abort();
      link.dispose();
    }
  }

  #wake(entry: Entry): void {
    const waiters = [...entry.waiters];
    entry.waiters.clear();
    for (const w of waiters) w();
  }

  /** True once `close()` began: its tasks went with it (what a request for one is told is not "not found"). */
  get closed(): boolean {
    return this.#closed;
  }

  /** The task `taskId` if `principal` owns it; anyone else gets nothing (as if it did not exist). */
  get(taskId: string, principal: string): Task | undefined {
    const entry = this.#tasks.get(taskId);
    return entry && entry.principal === principal ? entry : undefined;
  }

  /**
   * The refusal for a task id this instance does not hold (`get` found nothing, nor the cluster store):
   * -32602 "Task not found", saying what the id itself tells. An id an earlier run of this instance
   * made (the instance id kept in `stateDir`) or another instance made (gone, or another gateway's)
   * names a task that went with that run (whether it had ended, or expired, the id cannot tell); any
   * other was never made, has expired, or is not the caller's (which the answer never tells apart, so
   * no principal learns of another's tasks).
   */
  notFound(taskId: string): ProtocolError {
    const shown = taskId.slice(0, 200);
    const owner = ownerOfId(taskId);
    const rest = owner === undefined ? '' : taskId.slice(owner.length + 1);
    const here = owner === this.#deps.instanceId;
    // Made by a run: another instance's, or an earlier one of this instance (not this run's, whose ids are "unknown").
    if (owner !== undefined && RUN_ID.test(rest) && !(here && rest.startsWith(`${this.#run}.`))) {
      const which = here ? 'an earlier run of this gateway instance (it restarted since)' : `gateway instance ${owner.slice(0, 100)}, which no longer holds it`;
      // Running or ended, expired or not: the id cannot tell, so the answer does not say the work was not done.
      return invalidParams(`Task not found: ${shown} was held by ${which}; it is gone, with its result if it had one`, { taskId: shown, reason: 'task_lost' });
    }
    return invalidParams(`Task not found: ${shown} (unknown, expired, or not yours)`, { taskId: shown });
  }

  /** The task as it stands now (status from its call; `lastUpdatedAt` moves when anything visible changed). */
  snapshot(task: Task): TaskSnapshot {
    const entry = this.#tasks.get(task.id) ?? (task as Entry);
    const { call } = entry;
    const now = this.#deps.clock.now();
    let status: TaskStatus;
    let statusMessage: string | undefined;
    let inputRequests: Record<string, unknown> | undefined;
    let result: Record<string, unknown> | undefined;
    let error: TaskSnapshot['error'];
    const outcome = call.outcome;
    const round = this.#round(entry);
    if (entry.stopped) {
      status = entry.stopped.status;
      statusMessage = entry.stopped.error.message;
      if (status === 'failed') error = entry.stopped.error;
    } else if (round) {
      status = 'input_required';
      statusMessage = 'Waiting for input: answer the inputRequests with tasks/update';
      inputRequests = {};
      for (const p of this.waiting(entry)) inputRequests[p.key] = { method: p.method, params: p.params };
    } else if (!outcome) {
      const pending = call.pending;
      if (pending.length > 0) {
        status = 'input_required';
        statusMessage = 'Waiting for input: answer the inputRequests with tasks/update';
        inputRequests = {};
        for (const p of pending) inputRequests[p.key] = { method: p.method, params: p.params };
      } else {
        status = 'working';
      }
    } else if (outcome.kind === 'done' && outcome.outcome.kind === 'complete') {
      status = 'completed';
      result = outcome.outcome.result;
    } else if (outcome.kind === 'done') {
      // A 2026-07-28 backend's input_required without a way to carry it on, or its own task inside ours
      // (see spec/notes/tasks.md).
      status = 'failed';
      error = { code: -32603, message: `The backend answered with ${outcome.outcome.kind}, which a gateway task cannot carry on yet` };
      statusMessage = error.message;
    } else if (call.status === 'cancelled') {
      status = 'cancelled';
      const wire = toWireError(outcome.error);
      statusMessage = wire.message;
      if (outcome.error instanceof GatewayError && outcome.error.code === 'task_expired') {
        status = 'failed';
        error = wire;
      }
    } else {
      status = 'failed';
      error = toWireError(outcome.error);
      statusMessage = error.message;
    }
    const seen = visibleState({ status, inputRequests });
    if (seen !== entry.seen) {
      // The first snapshot is the task's creation; later changes move lastUpdatedAt.
      if (entry.seen !== '') entry.lastUpdatedAt = Math.max(entry.lastUpdatedAt, Math.min(now, call.updatedAt || now));
      entry.seen = seen;
    }
    return {
      taskId: entry.id,
      status,
      statusMessage,
      createdAt: entry.createdAt,
      lastUpdatedAt: Math.max(entry.lastUpdatedAt, entry.createdAt),
      ttlMs: entry.ttlMs,
      pollIntervalMs: this.#deps.settings.pollIntervalMs,
      inputRequests,
      result,
      error,
    };
  }

  /**
   * The task as a client reads it (`tasks/get`, the draft's `tasks/result`): its snapshot, noted so
   * that a drain waits for a client still polling a task to see it end (`awaitedReads`).
   */
  read(task: Task): TaskSnapshot {
    const snap = this.snapshot(task);
    const entry = this.#tasks.get(task.id);
    if (!entry) return snap;
    if (isTerminal(snap.status)) entry.endSeen = true;
    else entry.readAt = this.#deps.clock.now();
    return snap;
  }

  /**
   * How many tasks a client is polling without having seen their end: read running within the last
   * POLLING_INTERVALS poll intervals, and not read ended since. A drain without a cluster store (where
   * the end would outlive this instance) waits for them, so that such a client sees how its task ended.
   */
  awaitedReads(): number {
    const since = this.#deps.clock.now() - POLLING_INTERVALS * this.#deps.settings.pollIntervalMs;
    let count = 0;
    for (const entry of this.#tasks.values()) if (!entry.endSeen && entry.readAt !== undefined && entry.readAt >= since) count += 1;
    return count;
  }

  /** Cancels the task's call (cooperative: it may still end completed or failed). Idempotent. */
  cancel(task: Task, why = 'the task was cancelled (tasks/cancel)'): void {
    const entry = this.#tasks.get(task.id);
    if (entry && this.#round(entry)) {
      entry.stopped = { status: 'cancelled', error: toWireError(new GatewayError('cancelled', why)) };
      this.#ended(entry);
      this.#wake(entry);
      return;
    }
    (entry ?? task).call.cancel(new GatewayError('cancelled', why));
  }

  /** Cancels every running task and forgets all of them. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const entries = [...this.#tasks.values()];
    // What has already ended is written as it ended (it outlives this instance in the cluster store);
    // what is still running goes with the instance, and other instances report it as such.
    const { store } = this.#deps;
    if (store) {
      const ended = entries.map((entry) => ({ entry, snap: this.snapshot(entry) })).filter(({ snap }) => isTerminal(snap.status));
      await Promise.all(
        ended.map(({ entry, snap }) =>
          store
            .save(
              entry.id,
              { principal: entry.principal, instance: this.#deps.instanceId, revision: ++entry.revision, snapshot: snap as never },
              this.#deps.settings.retentionMs,
            )
            .catch((e: unknown) => this.#deps.onStoreError?.(e as Error)),
        ),
      );
    }
    for (const entry of entries) {
      entry.call.cancel(new GatewayError('gateway_closing'));
      this.#forget(entry);
    }
  }

  #expire(entry: Entry): void {
    if (this.#round(entry)) {
      entry.stopped = { status: 'failed', error: toWireError(new GatewayError('task_expired')) };
      this.#ended(entry);
      this.#wake(entry);
      return;
    }
    if (!entry.call.done) {
      entry.call.cancel(new GatewayError('task_expired'));
      return; // #ended reschedules the deletion after the retention period
    }
    this.#forget(entry);
  }

  #ended(entry: Entry): void {
    if (this.#tasks.get(entry.id) !== entry) return;
    this.#wake(entry);
    // A stateless backend's input round is not the end: the task waits for its answers.
    if (this.#round(entry)) return;
    if (this.#finished.has(entry.id)) return;
    this.#release(entry);
    // Readable for the retention period after the end, and never shorter than its ttlMs promised
    // (which stays what it was: keeping a task longer than promised is allowed).
    const now = this.#deps.clock.now();
    const deleteAt = Math.max(entry.deleteAt, now + this.#deps.settings.retentionMs);
    entry.timer.cancel();
    entry.deleteAt = deleteAt;
    entry.timer = this.#deps.clock.schedule(() => this.#forget(entry), deleteAt - now);
    for (const over of this.#finished.add(entry)) this.#forget(over);
  }

  /**
   * Writes every task this instance holds to the store again, as it stands now (Redis came back, maybe
   * empty): a task stays readable from every instance. How many were written.
   */
  async rewrite(): Promise<number> {
    const { store } = this.#deps;
    if (!store) return 0;
    const entries = [...this.#tasks.values()];
    await Promise.all(entries.map((entry) => this.#save(entry, store, this.snapshot(entry))));
    return entries.length;
  }

  async #save(entry: Entry, store: TaskStore, snap: TaskSnapshot): Promise<void> {
    const ttlMs = Math.max(entry.deleteAt - this.#deps.clock.now(), 0) + this.#deps.settings.retentionMs;
    const revision = ++entry.revision;
    try {
      await store.save(entry.id, { principal: entry.principal, instance: this.#deps.instanceId, revision, snapshot: snap as never }, ttlMs);
      if (revision === entry.revision) entry.unwritten = false;
    } catch (e) {
      if (revision === entry.revision) entry.unwritten = true;
      throw e;
    }
  }

  /** Writes the task to the store at creation and at every visible change, until it has ended. */
  async #persist(entry: Entry, store: TaskStore): Promise<void> {
    let last = '';
    while (!entry.persisting.signal.aborted) {
      const snap = this.snapshot(entry);
      const text = JSON.stringify(snap);
      if (text !== last) {
        last = text;
        await this.#save(entry, store, snap).catch((e: unknown) => {
          this.#deps.onStoreError?.(e as Error);
        });
      }
      if (isTerminal(snap.status)) return;
      try {
        await this.nextChange(entry, entry.persisting.signal);
      } catch {
        return;
      }
    }
  }

  #forget(entry: Entry): void {
    if (this.#tasks.get(entry.id) !== entry) return;
    entry.persisting.abort();
    this.#wake(entry);
    entry.timer.cancel();
    this.#tasks.delete(entry.id);
    this.#finished.delete(entry);
    this.#release(entry);
  }

  #release(entry: Entry): void {
    if (entry.released) return;
    entry.released = true;
    background('give back a task quota unit', () => this.#deps.quotas.release(entry.quota), this.#deps.log);
  }
}
