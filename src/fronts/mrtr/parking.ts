/**
 * The MRTR front's parking: the one owner of what the front keeps of a call between its requests.
 *
 * Each call the front serves has a book while it lives (the round it is in, how far its events have
 * been relayed, how it was started). A call that answers `input_required` is parked: it holds one unit
 * of the parked-call quotas (`parked:<principal>` and `parked:*`) from its first input round until it
 * ends or becomes a task, and an expiry timer on the clock seam cancels it when nobody retries within
 * the requestState's lifetime (or the backend's `parkTimeoutMs`). A retry claims its round once, in
 * the book itself: only the instance that holds a call serves its retries (a retry that lands on
 * another one is forwarded here), so this record decides alone, with no shared store and no await
 * between the check and the claim. The claim stops the timer. When a call ends its book goes, its
 * quota units are given back, and a call that ended while parked is remembered for as
 * long as its requestState lives, so its retry learns why, or gets the answer the backend finished with.
 *
 * Only the parking changes a book's round, quota and timer (`park`, `claim`, `release`, the call's
 * end); the relay position is a cursor its relayers advance. It also tells the metrics how long
 * clients take to answer a round and how many rounds a call took, and lists its parked calls for the
 * admin page (`parked()`: who, which backend and tool, which round, how long; never the inputs).
 */
import type { Quotas } from '../../cluster/quotas.js';
import type { Call, CallOutcome } from '../../core/calls/call.js';
import type { StartCall } from '../../core/calls/call-engine.js';
import { GatewayError, toWireError } from '../../errors.js';
import { background, type BackgroundLog } from '../../util/background.js';
import type { Metrics } from '../../observe/metrics.js';
import type { Clock, ClockTimer } from '../../util/clock.js';
import type { RelayCursor } from './round-waiter.js';

export interface ParkingOptions {
  readonly quotas: Quotas;
  /** Times parked-call expiry and how long an ended call is remembered. */
  readonly clock: Clock;
  readonly maxParkedPerPrincipal: number;
  /** Also bounds how many ended calls are remembered. */
  readonly maxParkedTotal: number;
  /** How long an ended call is remembered for its retry (the requestState lifetime). */
  readonly rememberMs: number;
  /** Where a failed background step (a quota unit given back) is reported. */
  readonly log?: BackgroundLog | undefined;
  /** Told each round's think time (park to claim) and each ended call's rounds. */
  readonly metrics?: Metrics | undefined;
}

/** A call parked for the retry of its round, as an operator sees it: never its inputs or answers. */
export interface ParkedCall {
  readonly id: string;
  readonly principal: string;
  readonly backend: string;
  readonly method: string;
  /** The tool or prompt it calls (a resource read shows none: its URI may carry values). */
  readonly name: string | undefined;
  readonly round: number;
  /** How long it has waited for its retry (ms, on the parking's clock). */
  readonly ageMs: number;
}

/** What the front keeps of a live call between its requests. */
export interface CallBook {
  /** Rounds answered with `input_required` so far (the round a retry must present). */
  readonly round: number;
  /** How far the call's events have been relayed; advanced by whoever relays them. */
  readonly relay: RelayCursor;
  /** How the call was started (a task made of it starts the next call of a stateless backend the same way). */
  readonly start: StartCall | undefined;
}

/** What the retry of a round gets when its call is no longer live (see `Parking.ended`). */
export type EndedRetry =
  /** The backend finished while the call waited (it went on without the answers): the retry gets this answer. */
  | { readonly kind: 'finished'; readonly backend: string; readonly outcome: CallOutcome }
  /** The backend gave up on its own request (its timeout, not ours). */
  | { readonly kind: 'expired'; readonly backend: string }
  /** The call waited too long for its client while another call needed its backend session (session-pool.ts). */
  | { readonly kind: 'reclaimed'; readonly backend: string }
  /** The round was answered by an earlier retry, and the call has ended since (a replay). */
  | { readonly kind: 'answered' }
  /** Nothing to give: the call is gone, with why when it is known. */
  | { readonly kind: 'gone'; readonly why: string | undefined };

interface Book extends CallBook {
  round: number;
  /** Quota keys held from the first input round until the call ends or becomes a task. */
  quota: readonly string[] | undefined;
  /** True from an `input_required` answer until its retry claims the round. */
  parked: boolean;
  /** When it was last parked (the clock's ms). */
  parkedAt: number;
  expiry: ClockTimer | undefined;
  readonly call: Call;
}

export class Parking {
  readonly #opts: ParkingOptions;
  readonly #books = new Map<string, Book>();
  readonly #ended: EndedCalls;

  constructor(opts: ParkingOptions) {
    this.#opts = opts;
    this.#ended = new EndedCalls(opts.clock, opts.maxParkedTotal);
  }

  /** Live calls with a book (for tests and metrics). */
  get size(): number {
    return this.#books.size;
  }

  /** The calls parked now, waiting for the retry of their round. */
  parked(): ParkedCall[] {
    const now = this.#opts.clock.now();
    const out: ParkedCall[] = [];
    for (const book of this.#books.values()) {
      if (!book.parked || book.call.done) continue;
      const { call } = book;
      const params = book.start?.params;
      // A tool or prompt name; never a resource URI (a client fills a template's variables with its values).
      const name = params?.['name'];
      out.push({
        id: call.id,
        principal: call.principal,
        backend: call.backend,
        method: call.method,
        name: typeof name === 'string' ? name : undefined,
        round: book.round,
        ageMs: now - book.parkedAt,
      });
    }
    return out;
  }

  /** The call's book, made on first sight (with how it was `start`ed); it goes when the call ends. */
  bookOf(call: Call, start?: StartCall): CallBook {
    return this.#book(call, start);
  }

  /**
   * Parks the call for the retry of its next round: takes a unit of the parked-call quotas unless it
   * holds one, starts its expiry (`ttlMs`) and counts the round. Resolves with the round to seal, or
   * undefined when the call ended while the quota was being taken (nothing is held then). Throws
   * `parked_call_limit` when a quota is full, after cancelling the call with that error.
   */
  async park(call: Call, ttlMs: number): Promise<number | undefined> {
    const book = this.#book(call);
    if (!book.quota) {
      const keys = [`parked:${call.principal}`, 'parked:*'];
      const held = await this.#opts.quotas.acquire([
        { key: keys[0]!, limit: this.#opts.maxParkedPerPrincipal },
        { key: keys[1]!, limit: this.#opts.maxParkedTotal },
      ]);
      if (!held) {
        const error = new GatewayError('parked_call_limit');
        call.cancel(error);
        throw error;
      }
      if (call.done) {
        // It ended while the quota was being taken (its end found none to give back): give it back here.
        await this.#opts.quotas.release(keys);
        return undefined;
      }
      book.quota = keys;
    }
    book.round += 1;
    book.parked = true;
    book.parkedAt = this.#opts.clock.now();
    book.expiry?.cancel(); // a call has one expiry: its latest round's
    book.expiry = this.#opts.clock.schedule(() => call.cancel(new GatewayError('cancelled', 'nobody answered in time')), ttlMs);
    return book.round;
  }

  /**
   * The retry of `round` takes the call back: true the first time that round is claimed (and only while
   * the call is parked in it), which stops its expiry; false for a stale retry.
   */
  claim(call: Call, round: number): boolean {
    const book = this.#book(call);
    if (book.round !== round || !book.parked) return false;
    book.expiry?.cancel();
    book.expiry = undefined;
    book.parked = false;
    this.#opts.metrics?.thinkTime((this.#opts.clock.now() - book.parkedAt) / 1000);
    return true;
  }

  /** Gives back the quota units the call holds (it became a task: a task is not a parked call). */
  async release(call: Call): Promise<void> {
    const book = this.#books.get(call.id);
    const held = book?.quota;
    if (!book || !held) return;
    book.quota = undefined;
    await this.#opts.quotas.release(held);
  }

  /**
   * What the retry of `round` by `principal` gets for a call that is no longer live: the answer the
   * backend finished with (given once), that the backend gave up on its request, that an earlier retry
   * answered the round (a replay), or that it is gone.
   */
  ended(callId: string, principal: string, round: number): EndedRetry {
    const ended = this.#ended.get(callId);
    if (!ended || ended.principal !== principal) return { kind: 'gone', why: undefined };
    if (ended.outcome && ended.round === round) {
      this.#ended.answered(callId); // given once: a result is not kept for longer than needed
      return { kind: 'finished', backend: ended.backend, outcome: ended.outcome };
    }
    // Rounds before the last one were all answered (a call parks in round n once round n - 1 was).
    if (round < ended.round || (ended.answered && round === ended.round)) return { kind: 'answered' };
    if (ended.expired) return { kind: 'expired', backend: ended.backend };
    if (ended.reclaimed) return { kind: 'reclaimed', backend: ended.backend };
    return { kind: 'gone', why: ended.why };
  }

  /** The call's book; a new one is dropped again when the call ends (at once when it has). */
  #book(call: Call, start?: StartCall): Book {
    const known = this.#books.get(call.id);
    if (known) return known;
    const book: Book = { round: 0, relay: { seq: 0 }, start, quota: undefined, parked: false, parkedAt: 0, expiry: undefined, call };
    this.#books.set(call.id, book);
    call.onDone(() => this.#drop(call, book));
    return book;
  }

  /** The call ended: its book goes, and whatever it held is given back. */
  #drop(call: Call, book: Book): void {
    this.#books.delete(call.id);
    this.#opts.metrics?.callEnded(book.round);
    // Parked: its retry learns how it ended. Its last round retried already: a replay learns that.
    if (book.parked) this.#ended.add(call, book.round, this.#opts.rememberMs);
    else if (book.round > 0) this.#ended.addAnswered(call, book.round, this.#opts.rememberMs);
    book.expiry?.cancel();
    const quota = book.quota;
    if (quota) background('give back a parked-call quota unit', () => this.#opts.quotas.release(quota), this.#opts.log);
    book.quota = undefined; // given back once, whoever else held on to the book
  }
}

/**
 * A call that ended while it waited for a retry (why, and how it ended when it finished on its own), or
 * after the retry of its last round took it back (`answered`).
 */
interface EndedCall {
  readonly principal: string;
  readonly backend: string;
  readonly round: number;
  readonly why: string | undefined;
  /** The backend withdrew a request of this round (its own timeout) or failed because one timed out. */
  readonly expired: boolean;
  /** Cancelled so that its backend session could serve a call that waited for one (`call_reclaimed`). */
  readonly reclaimed: boolean;
  /** Set when the backend finished (it went on without the answers): the retry gets this answer. */
  readonly outcome: CallOutcome | undefined;
  /** Rounds up to `round` were answered by a retry: another retry of one is a replay. */
  readonly answered: boolean;
}

/**
 * Calls that ended while waiting for a retry or after one, each kept for as long as its requestState
 * lives (at most `max` of them; the oldest go first). A call cancelled by the gateway with nothing to
 * tell is not kept.
 */
class EndedCalls {
  readonly #clock: Clock;
  readonly #max: number;
  /**
   * Call id → what it ended with and until when, in two books of at most `max` each: what a retry is
   * owed (an answer, why it is gone) is never pushed out by the many marks of rounds answered already.
   * Insertion order is expiry order (one ttl for all).
   */
  readonly #told = new Map<string, { ended: EndedCall; until: number }>();
  readonly #answered = new Map<string, { ended: EndedCall; until: number }>();

  constructor(clock: Clock, max: number) {
    this.#clock = clock;
    this.#max = max;
  }

  add(call: Call, round: number, ttlMs: number): void {
    const outcome = call.outcome;
    const finished = outcome?.kind === 'done' ? outcome : undefined;
    const error = outcome?.kind === 'error' ? outcome.error : undefined;
    const expired = call.withdrawn > 0 || (error instanceof GatewayError && error.code === 'backend_request_expired');
    let why: string | undefined;
    if (call.withdrawn > 0) {
      why = 'the backend stopped waiting for the answer (servers built on the v1 SDK give up on an elicitation or sampling request after 60 s by default)';
    } else if (outcome?.kind === 'error' && !(error instanceof GatewayError && error.code === 'cancelled')) {
      why = `the backend call ended while it waited: ${toWireError(error).message}`;
    }
    if (!why && !finished) return;
    const reclaimed = error instanceof GatewayError && error.code === 'call_reclaimed';
    const ended = { principal: call.principal, backend: call.backend, round, why, expired, reclaimed, outcome: finished, answered: false };
    this.#keep(this.#told, call.id, ended, this.#clock.now() + ttlMs);
  }

  /** `call` ended after the retry of its `round` took it back: a replay of that round, or an earlier one, is told so. */
  addAnswered(call: Call, round: number, ttlMs: number): void {
    const ended = {
      principal: call.principal,
      backend: call.backend,
      round,
      why: undefined,
      expired: false,
      reclaimed: false,
      outcome: undefined,
      answered: true,
    };
    this.#keep(this.#answered, call.id, ended, this.#clock.now() + ttlMs);
  }

  get(id: string): EndedCall | undefined {
    const kept = this.#told.get(id) ?? this.#answered.get(id);
    return kept && kept.until > this.#clock.now() ? kept.ended : undefined;
  }

  /** The answer `id` finished with went to its retry: later retries of the round are replays. */
  answered(id: string): void {
    const kept = this.#told.get(id);
    if (!kept) return;
    this.#told.delete(id);
    this.#keep(this.#answered, id, { ...kept.ended, outcome: undefined, answered: true }, kept.until);
  }

  /** Kept in `book` until `until`: no timer each (a busy gateway ends many calls), the expired ones swept as new ones come. */
  #keep(book: Map<string, { ended: EndedCall; until: number }>, id: string, ended: EndedCall, until: number): void {
    const now = this.#clock.now();
    for (const [key, kept] of book) {
      if (kept.until > now) break;
      book.delete(key);
    }
    book.delete(id);
    book.set(id, { ended, until });
    if (book.size > this.#max) book.delete(book.keys().next().value!);
  }
}
