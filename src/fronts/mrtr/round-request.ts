/**
 * What an MRTR round request says (2026-07-28 basic/patterns/mrtr.mdx), read before any call is touched:
 * the name it calls, the answers it carries, its requestState, the params its requestState is bound to
 * (and their digest), and whether and when its call may become a task (extension
 * io.modelcontextprotocol/tasks). No state, no clock: the same request always reads the same.
 */
import { parseInputResponses, type InputResponseMap } from '../../core/calls/input-responses.js';
import { INPUT_RESPONSES_INVALID, ProtocolError, WireCode, invalidParams } from '../../errors.js';
import type { Digester, StateContext } from '../../protocol/request-state.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import { TASKS_EXTENSION } from '../../protocol/rev-2026-07-28/tasks.js';
import { TooDeepError, checkDepth } from '../../util/canonical-json.js';
import type { TaskPolicy } from '../tasks/policy.js';

/** The param that names what a round calls, per method. */
const NAME_FIELD: Record<string, 'name' | 'uri'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

export interface RoundRequest {
  /** The param that names what is called: `name`, or `uri` for resources/read. */
  readonly field: 'name' | 'uri';
  /** The exposed name or URI. */
  readonly name: string;
  /** The answers the request carries (`inputResponses`), checked in shape. */
  readonly answers: InputResponseMap | undefined;
  /** The requestState it presents (opened by the codec, which refuses anything not its own). */
  readonly requestState: unknown;
  /** Every param the requestState is bound to: all but `inputResponses`, `requestState` and `_meta`. */
  readonly bound: Record<string, unknown>;
  /** The params a call is started with: `bound` without the 2025-11-25 `task` hint. */
  readonly forwarded: Record<string, unknown>;
}

/**
 * Reads a tools/call, prompts/get or resources/read request (its params already checked against the
 * method's schema). Throws -32602 for a missing name or malformed `inputResponses`.
 */
export function readRoundRequest(req: FrontRequest): RoundRequest {
  const field = NAME_FIELD[req.method]!;
  // The requestState is bound to every param of the request but the round fields and `_meta`, so a
  // retry that changes, adds or drops anything (an argument, a `task` hint, an unknown field) is a
  // different request: `request_state_request`, and the parked call is left for the true retry.
  const { inputResponses, requestState, _meta, ...bound } = req.params;
  // `task` is the 2025-11-25 task hint: tolerated and ignored (tasks are the extension's now), never
  // forwarded. Without one, `bound` is forwarded as it is (a call copies its params before it sends them).
  const forwarded = Object.hasOwn(bound, 'task') ? withoutTask(bound) : bound;
  const name = forwarded[field];
  if (typeof name !== 'string' || name.length === 0) throw invalidParams(`params.${field} must be a non-empty string`);
  const parsed = parseInputResponses(inputResponses);
  if (!parsed.ok) throw invalidParams(parsed.error, INPUT_RESPONSES_INVALID);
  return { field, name, answers: parsed.value, requestState, bound, forwarded };
}

function withoutTask(params: Record<string, unknown>): Record<string, unknown> {
  const { task: _legacyTaskHint, ...rest } = params;
  return rest;
}

/** The digest a requestState is bound to (`StateContext.digest`): the method and `bound`. -32602 when too deep to digest. */
export async function requestDigest(method: string, bound: Record<string, unknown>, digest: Digester): Promise<string> {
  return digestOnDemand(method, bound, digest).digest;
}

/**
 * The digest of `requestDigest`, computed the first time `digest` is read: only a round that seals or
 * opens a requestState needs it, a call that ends in one exchange never does. What could not be
 * digested is refused at once all the same (-32602), as `requestDigest` refuses it.
 */
export function digestOnDemand(method: string, bound: Record<string, unknown>, digester: Digester): { readonly digest: string | Promise<string> } {
  try {
    checkDepth({ method, params: bound });
  } catch (e) {
    throw tooDeep(e);
  }
  let digest: string | Promise<string> | undefined;
  return {
    get digest(): string | Promise<string> {
      digest ??= digester({ method, params: bound });
      return digest;
    },
  };
}

function tooDeep(e: unknown): unknown {
  return e instanceof TooDeepError ? invalidParams(`Invalid params: ${e.message}`) : e;
}

/** What a round's requestState is sealed with and checked against, and what the round's steps need of the request. */
export interface RoundBinding extends StateContext {
  /** The exposed name or URI (for error messages; not sealed). */
  readonly name: string;
  /** How long a parked call of this backend waits for its retry (never longer than the state lives). */
  readonly parkMs: number;
  /** Set when this request may turn its call into a task: after how long without an end or input. */
  readonly promoteAfterMs?: number | undefined;
  readonly taskTtlMs?: number | undefined;
  /** The call's trace as its requestState sealed it (a retry), sealed again into the next round's. */
  readonly trace?: string | undefined;
}

/** What a request asks of tasks: whether it declared the extension, and the draft dialect's explicit hint. */
export interface TaskAsk {
  /** The request declared the tasks extension in its capabilities. */
  readonly declared: boolean;
  /** The draft dialect's explicit `task` hint: make it a task after this long (counts as asking). */
  readonly hintMs?: number | undefined;
}

/**
 * After how long the tool `name`'s call may become a task, or undefined when it never will on this
 * request: a `forbidden` tool never; the hint's delay when given; the policy's threshold for a request
 * that declared the extension. Throws -32021 for a `required` tool asked without the extension.
 */
export function promotionFor(policy: TaskPolicy, ask: TaskAsk, name: string): number | undefined {
  const wantsTasks = ask.declared || ask.hintMs !== undefined;
  if (policy.support === 'required' && !wantsTasks) {
    throw new ProtocolError(
      WireCode.MissingRequiredClientCapability,
      `Missing required client capability: ${name} runs as a task, which needs the extension ${TASKS_EXTENSION}`,
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    );
  }
  if (policy.support === 'forbidden') return undefined;
  if (ask.hintMs !== undefined) return ask.hintMs;
  return ask.declared ? policy.promoteAfterMs : undefined;
}
