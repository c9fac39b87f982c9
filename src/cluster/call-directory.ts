/**
 * Which gateway instance owns a call, by call id. A live call holds a backend session on one
 * instance and cannot move; a retry that reaches another instance looks the owner up here (and, once
 * the cluster lands, is forwarded to it). The in-memory default serves one process; a Redis
 * implementation plugs into the same interface. Only ids and instance names go through it.
 */
export interface CallDirectory {
  /** Records that `instanceId` owns `callId`. */
  register(callId: string, instanceId: string): Promise<void>;
  /** The owner of `callId`, or undefined when no instance holds it any more. */
  ownerOf(callId: string): Promise<string | undefined>;
  /** Forgets `callId` (the call is over). */
  unregister(callId: string): Promise<void>;
}

/** One process's directory. Share one instance between in-process gateways to model a cluster in tests. */
export class InMemoryCallDirectory implements CallDirectory {
  readonly #owners = new Map<string, string>();

  get size(): number {
    return this.#owners.size;
  }

  async register(callId: string, instanceId: string): Promise<void> {
    this.#owners.set(callId, instanceId);
  }

  async ownerOf(callId: string): Promise<string | undefined> {
    return this.#owners.get(callId);
  }

  async unregister(callId: string): Promise<void> {
    this.#owners.delete(callId);
  }
}
