/**
 * The calls a scope started, watched for what the proxy tools report: their log lines go to the
 * scope's log buffer, their progress, resource updates and other notifications (and log lines at or
 * above the work's level) are `notification` events (work-events.ts); an input request nobody is
 * asking the client about right now becomes a pending client action (category 4) and an
 * `elicitation_request` / `sampling_request` event, and one that ends unanswered an
 * `elicitation_expired` / `sampling_expired` event; a call that became a task reports its end as a
 * `task_*` event. Answers to pending client actions go in through the call
 * (or its task, when a stateless backend's round carries it on), so `respond_to_*` and an MRTR retry
 * feed the same call.
 */
import type { ClientRefusal } from '../../core/backend/port.js';
import type { Call, PendingInput } from '../../core/calls/call.js';
import { responseProblem } from '../../core/calls/input-responses.js';
import { missingCapabilityFor, type InputCapabilities } from '../../core/input-capabilities.js';
import { linkedController, wakeOrAbort } from '../../util/abort.js';
import { isTerminal } from '../../protocol/rev-2026-07-28/tasks.js';
import type { TaskRegistry } from '../tasks/registry.js';
import type { Scope, Work } from './scope.js';
import { background } from '../../util/background.js';
import { isExpired } from './task-status.js';
import { expiredType, expiryOf, relayToScope } from './work-events.js';

/** A pending client action as the proxy tools list it. */
export interface ClientAction {
  /** Opaque: `<call>.<key>`, meaningful only inside its scope. */
  readonly requestId: string;
  readonly server: string;
  readonly method: string;
  readonly params: Record<string, unknown>;
  readonly taskId?: string | undefined;
}

export interface WorkDeps {
  readonly registry: TaskRegistry;
  /** True when the server `name` is no longer reachable through the proxy tools (remove_server). */
  readonly serverGone?: ((name: string) => boolean) | undefined;
}

/** The request attending a work item right now, and what its client can be asked. */
export interface Attendance {
  readonly caps: InputCapabilities;
}

interface Tracked extends Work {
  attended: Attendance | undefined;
  /** Pending client actions announced (`*_request` events) and not yet seen to end: key → method. */
  readonly announced: Map<string, string>;
  readonly stop: AbortController;
  /** Wakes the watcher when something outside the call changed (attendance, forwarding, promotion). */
  readonly wakers: Set<() => void>;
  seq: number;
  released: boolean;
}

export class WorkTracker {
  readonly #deps: WorkDeps;
  readonly #watching = new Set<Tracked>();

  constructor(deps: WorkDeps) {
    this.#deps = deps;
  }

  /** Registers a call the scope started and watches it until it (or its task) ends. */
  track(scope: Scope, init: Omit<Work, 'forwarded' | 'id'>, attended: Attendance | undefined): Work {
    const work: Tracked = {
      ...init,
      id: init.call.id,
      forwarded: new Set(),
      attended,
      announced: new Map(),
      stop: new AbortController(),
      wakers: new Set(),
      seq: 0,
      released: false,
    };
    scope.work.set(work.id, work);
    this.#watching.add(work);
    background(
      'watch a proxy-tool call',
      this.#watch(scope, work).finally(() => {
        this.#watching.delete(work);
        if (scope.work.get(work.id) === work) scope.work.delete(work.id);
      }),
    );
    return work;
  }

  /** Gives `work` up (its call was cancelled, or ended without becoming a task): the watcher relays what is left and stops. */
  release(work: Work): void {
    (work as Tracked).released = true;
    this.poke(work);
  }

  /** Stops every watcher (the gateway is closing). */
  close(): void {
    for (const w of [...this.#watching]) w.stop.abort();
  }

  /** Sets or clears who attends `work` (an `execute_tool` request that is still waiting for it). */
  attend(work: Work, attended: Attendance | undefined): void {
    (work as Tracked).attended = attended;
    this.poke(work);
  }

  /** Makes the watcher look again (after `forwarded` changed, say). */
  poke(work: Work): void {
    const { wakers } = work as Tracked;
    const all = [...wakers];
    wakers.clear();
    for (const w of all) w();
  }

  /** What the work waits for: the call's pending input, or its task's (a stateless backend's round). */
  waiting(scope: Scope, work: Work): PendingInput[] {
    if (work.taskId !== undefined) {
      const task = this.#deps.registry.get(work.taskId, scope.principal);
      return task ? this.#deps.registry.waiting(task) : [];
    }
    return work.call.done ? [] : work.call.pending;
  }

  /** True when `input` is for the client to answer through `respond_to_*` rather than an MRTR round. */
  isClientAction(work: Work, input: PendingInput): boolean {
    const { attended } = work as Tracked;
    if (work.forwarded.has(input.key)) return false;
    return attended === undefined || missingCapabilityFor(input.method, input.params, attended.caps) !== undefined;
  }

  /** Every pending client action of the scope, oldest work first. */
  actions(scope: Scope): ClientAction[] {
    const out: ClientAction[] = [];
    for (const work of scope.work.values()) {
      for (const input of this.waiting(scope, work)) {
        if (!this.isClientAction(work, input)) continue;
        out.push({ requestId: `${work.id}.${input.key}`, server: work.server, method: input.method, params: input.params, taskId: work.taskId });
      }
    }
    return out;
  }

  /** The pending client action `requestId` of the scope, or a message saying why there is none. */
  #find(scope: Scope, requestId: string, method: string): { work: Work; input: PendingInput } | string {
    const dot = requestId.indexOf('.');
    const work = dot > 0 ? scope.work.get(requestId.slice(0, dot)) : undefined;
    const key = requestId.slice(dot + 1);
    const input = work ? this.waiting(scope, work).find((p) => p.key === key) : undefined;
    if (!work || !input || !this.isClientAction(work, input)) return `No pending request ${requestId} (it was answered, withdrawn, or never existed)`;
    if (input.method !== method) {
      const tool = input.method === 'sampling/createMessage' ? 'respond_to_sampling' : 'respond_to_elicitation';
      return `${requestId} is a${input.method === 'sampling/createMessage' ? ' sampling' : 'n elicitation'} request: answer it with ${tool}`;
    }
    return { work, input };
  }

  /**
   * Answers one pending client action of `method`. A message when it cannot be: unknown (or already
   * answered), of another kind, or an answer that does not fit the request (the request stays pending).
   */
  answer(scope: Scope, requestId: string, method: string, value: Record<string, unknown>): string | undefined {
    const found = this.#find(scope, requestId, method);
    if (typeof found === 'string') return found;
    const { work, input } = found;
    const problem = responseProblem(input.method, input.params, value);
    if (problem) return `The answer does not fit the request: ${problem}`;
    if (work.taskId !== undefined) {
      const task = this.#deps.registry.get(work.taskId, scope.principal);
      if (!task) return `No pending request ${requestId}`;
      this.#deps.registry.answer(task, { [input.key]: value });
      return undefined;
    }
    work.call.answer({ [input.key]: value });
    return undefined;
  }

  /** Refuses one pending client action (a declined sampling request): the backend's request fails with `error`. */
  refuse(scope: Scope, requestId: string, method: string, error: ClientRefusal): string | undefined {
    const found = this.#find(scope, requestId, method);
    if (typeof found === 'string') return found;
    const { work, input } = found;
    const task = work.taskId !== undefined ? this.#deps.registry.get(work.taskId, scope.principal) : undefined;
    const call = task?.call ?? work.call;
    if (!call.refuse(input.key, error))
      return 'This request comes from a stateless (2026-07-28) backend, which cannot be told of a refusal: cancel the task instead';
    return undefined;
  }

  async #watch(scope: Scope, work: Tracked): Promise<void> {
    const { registry } = this.#deps;
    const signal = work.stop.signal;
    let call = work.call;
    while (!signal.aborted) {
      const task = work.taskId !== undefined ? registry.get(work.taskId, scope.principal) : undefined;
      // A stateless backend's task carries on with a new call: follow it.
      const current = task?.call ?? work.call;
      if (current !== call) {
        call = current;
        work.seq = 0;
      }
      work.seq = relayToScope(scope, work, call, work.seq);
      // A stateless backend's round (its call ended with input_required) is not the end of the work:
      // a new call carries it on (attend, or the task's own resume), and the watcher is poked then.
      const outcome = call.outcome;
      const round = work.resumable && outcome?.kind === 'done' && outcome.outcome.kind === 'input_required';
      const ended = task ? isTerminal(registry.snapshot(task).status) : call.done && !round;
      const released = work.released && work.taskId === undefined;
      const waiting = this.waiting(scope, work);
      this.#expire(scope, work, call, waiting, ended || released);
      if (released) return;
      for (const input of waiting) {
        if (work.announced.has(input.key) || !this.isClientAction(work, input)) continue;
        work.announced.set(input.key, input.method);
        const type = input.method === 'sampling/createMessage' ? 'sampling_request' : input.method === 'elicitation/create' ? 'elicitation_request' : undefined;
        if (type) scope.events.add(type, work.server, { requestId: `${work.id}.${input.key}`, ...(work.taskId ? { taskId: work.taskId } : {}) });
      }
      if (ended) {
        if (task) this.#taskEnded(scope, work, registry.snapshot(task));
        return; // a call that became a task stayed listed for `respond_to_*` until its task ended
      }
      const link = linkedController(signal);
      try {
        await Promise.race([
          task ? registry.nextChange(task, link.controller.signal) : call.nextChange(link.controller.signal),
          wakeOrAbort(work.wakers, link.controller.signal),
        ]);
      } catch {
        if (signal.aborted) return;
      } finally {
        link.controller.abort();
        link.dispose();
      }
    }
  }

  /**
   * Reports the announced pending client actions that are no longer waiting and that nobody answered
   * (`*_expired`, with why): a sampling request past its timeout, a request the backend withdrew, or
   * one whose call ended (a backend that crashed, restarted or was removed; a cancelled or expired task).
   */
  #expire(scope: Scope, work: Tracked, call: Call, waiting: readonly PendingInput[], ended: boolean): void {
    if (work.announced.size === 0) return;
    const still = new Set(waiting.map((p) => p.key));
    for (const [key, method] of work.announced) {
      if (still.has(key)) continue;
      work.announced.delete(key);
      const why = expiryOf(call, key, ended, this.#deps.serverGone?.(work.server) === true);
      const type = expiredType(method);
      if (why && type) scope.events.add(type, work.server, { requestId: `${work.id}.${key}`, ...(work.taskId ? { taskId: work.taskId } : {}), ...why });
    }
  }

  #taskEnded(scope: Scope, work: Tracked, snap: ReturnType<TaskRegistry['snapshot']>): void {
    const base = { taskId: work.taskId, toolName: work.name };
    const expired = isExpired(snap);
    const type = snap.status === 'completed' ? 'task_completed' : snap.status === 'cancelled' ? 'task_cancelled' : expired ? 'task_expired' : 'task_failed';
    const toolError = snap.status === 'completed' && (snap.result as { isError?: unknown } | undefined)?.isError === true;
    scope.events.add(
      type,
      work.server,
      snap.status === 'completed' ? { ...base, ...(toolError ? { isError: true } : {}) } : { ...base, error: snap.statusMessage },
    );
  }

  /** Called when `work` was made a task: from now on its end is reported as a task event. */
  promoted(work: Work, taskId: string): void {
    work.taskId = taskId;
    this.poke(work); // the watcher follows the task from now on
  }
}
