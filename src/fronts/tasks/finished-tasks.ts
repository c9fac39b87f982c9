/**
 * The finished tasks an instance still holds for reading, overall and per principal, oldest first, and
 * which one a full bound forgets first. The bounds are a multiple of the running-task bounds
 * (RETAINED_FACTOR): past one, a finished task is forgotten early, so memory stays bounded however fast
 * a client creates tasks.
 */

const RETAINED_FACTOR = 4;

/** What the bookkeeping reads of a task. */
export interface FinishedTask {
  readonly id: string;
  readonly principal: string;
  /** Its last write to the cluster store failed (Redis away): what the store holds is older. */
  readonly unwritten: boolean;
}

export class FinishedTasks<T extends FinishedTask> {
  readonly #all = new Map<string, T>();
  readonly #by = new Map<string, Map<string, T>>();
  readonly #maxPerPrincipal: number;
  readonly #maxTotal: number;

  /** `maxPerPrincipal`, `maxTotal`: the running-task bounds. */
  constructor(maxPerPrincipal: number, maxTotal: number) {
    this.#maxPerPrincipal = maxPerPrincipal * RETAINED_FACTOR;
    this.#maxTotal = maxTotal * RETAINED_FACTOR;
  }

  has(id: string): boolean {
    return this.#all.has(id);
  }

  /** Holds `task`; the tasks the bounds now make it forget (the caller forgets them, and `delete`s them here). */
  add(task: T): T[] {
    this.#all.set(task.id, task);
    let mine = this.#by.get(task.principal);
    if (!mine) this.#by.set(task.principal, (mine = new Map()));
    mine.set(task.id, task);
    const over: T[] = [];
    if (mine.size > this.#maxPerPrincipal) over.push(firstToForget(mine));
    if (this.#all.size - over.length > this.#maxTotal) over.push(firstToForget(this.#all, over));
    return over;
  }

  delete(task: T): void {
    this.#all.delete(task.id);
    const mine = this.#by.get(task.principal);
    mine?.delete(task.id);
    if (mine?.size === 0) this.#by.delete(task.principal);
  }
}

/**
 * The finished task a full bound forgets first: the oldest one whose last state the cluster store
 * holds. One whose last write failed (Redis away) is kept while others can go, so that its end is
 * written when Redis is back rather than read from the store as a task that was running on an instance
 * that no longer holds it (reported failed). With only such tasks, the oldest goes: memory stays
 * bounded. `skip`: already chosen.
 */
function firstToForget<T extends FinishedTask>(tasks: Map<string, T>, skip: readonly T[] = []): T {
  let oldest: T | undefined;
  for (const task of tasks.values()) {
    if (skip.includes(task)) continue;
    oldest ??= task;
    if (!task.unwritten) return task;
  }
  return oldest!;
}
