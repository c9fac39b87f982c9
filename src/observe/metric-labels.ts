/**
 * Label values for a request's metrics, from bounded sets only: a client names its method and a
 * backend its error codes, so neither goes into a label as given. The method is one of MCP's (else
 * `other`); the outcome is the result's type, the gateway's own error reason, the name of a JSON-RPC
 * code the gateway uses, or `error`; a client that went away is `client_gone`.
 */
import { WireCode, isGatewayReason, toWireError } from '../errors.js';

const METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'completion/complete',
  'logging/setLevel',
  'subscriptions/listen',
  'server/discover',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'tasks/update',
  'tasks/input_response',
]);

const RESULT_TYPES = new Set(['complete', 'input_required', 'task']);

const CODE_NAMES = new Map<number, string>(
  Object.entries(WireCode).map(([name, code]) => [code, name.replace(/[A-Z]/g, (c, i: number) => (i ? '_' : '') + c.toLowerCase())]),
);

/** True for an outcome that is an error the client got (not a result, not a client that went away). */
export function isErrorOutcome(outcome: string): boolean {
  return !RESULT_TYPES.has(outcome) && outcome !== 'client_gone';
}

/** The method as a label value: MCP's own methods, `other` for anything else. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'other';
}

/** A successful answer's outcome: its `resultType` (`complete` when it has none, as a legacy result). */
export function resultOutcome(result: Record<string, unknown>): string {
  const t = result['resultType'];
  return typeof t === 'string' && RESULT_TYPES.has(t) ? t : 'complete';
}

/** A failed request's outcome: the gateway's reason, else the name of a code it uses, else `error`. */
export function errorOutcome(e: unknown): string {
  const wire = toWireError(e);
  const reason = (wire.data as { reason?: unknown } | undefined)?.reason;
  if (isGatewayReason(reason)) return reason;
  return CODE_NAMES.get(wire.code) ?? 'error';
}
