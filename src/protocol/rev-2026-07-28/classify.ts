/**
 * Era classification of a POST body (the SDK's `classifyInboundRequest`), with a fast path for what
 * nearly every request is: a plain 2026-07-28 JSON-RPC request whose headers agree with its body and
 * whose `_meta` envelope the SDK already found valid. The SDK's classifier validates the body with zod
 * against four message schemas and the envelope against the capability schemas on every request (about
 * 50 µs for a client that declares elicitation), which the hot path of a call cannot afford (issue 30).
 *
 * The fast path answers only where the SDK would answer the same: it checks the JSON-RPC request
 * shape by hand as strictly as the SDK's schema (only `jsonrpc`, `id`, `method`, `params`; `jsonrpc`
 * "2.0"; a string or safe-integer id; a string method other than `initialize`; params an object whose
 * `_meta` claims 2026-07-28; a string or safe-integer `progressToken`; no related-task key), and takes
 * the envelope as valid only when the SDK validated the same envelope before (its text, `progressToken`
 * aside, remembered; at most `REMEMBERED` of them, forgotten all at once when full, so odd envelopes
 * cannot grow it). Anything else, headers with whitespace or that disagree included, goes to the SDK,
 * whose verdict (and rejection) stands. test/protocol/rev-2026-07-28/classify.test.ts holds both paths
 * to the same answers over valid and invalid inputs.
 */
import { PROTOCOL_VERSION_META_KEY, RELATED_TASK_META_KEY, classifyInboundRequest } from '@modelcontextprotocol/server';

export type Classification = ReturnType<typeof classifyInboundRequest>;
export type InboundRequest = Parameters<typeof classifyInboundRequest>[0];

/** The revision the fast path serves. */
const MODERN = '2026-07-28';
/** How many valid envelopes are remembered (a gateway's clients send a handful of distinct ones). */
const REMEMBERED = 256;
/** The longest envelope text remembered (a real one is a few hundred characters): at most 512 Ki characters held. */
const MAX_ENVELOPE_CHARS = 2_048;
const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

/** Envelopes (`_meta` without `progressToken`, as JSON text) the SDK found valid. */
const validEnvelopes = new Set<string>();

/** The SDK's classification of `request`, from the fast path where it applies. */
export function classify(request: InboundRequest): Classification {
  const envelope = plainModernEnvelope(request);
  if (envelope !== undefined && validEnvelopes.has(envelope)) {
    return { kind: 'modern', messageKind: 'request', message: request.body, classification: { era: 'modern', revision: MODERN } } as Classification;
  }
  const classified = classifyInboundRequest(request);
  if (envelope !== undefined && classified.kind === 'modern' && classified.messageKind === 'request') {
    if (validEnvelopes.size >= REMEMBERED) validEnvelopes.clear();
    validEnvelopes.add(envelope);
  }
  return classified;
}

/**
 * The envelope text of a body that is a plain 2026-07-28 request whose headers match it exactly, or
 * undefined when the SDK must look at it.
 */
function plainModernEnvelope(request: InboundRequest): string | undefined {
  if (request.httpMethod !== 'POST') return undefined;
  const body = request.body;
  if (!isPlainObject(body)) return undefined;
  for (const key in body) if (!REQUEST_KEYS.has(key)) return undefined;
  if (body['jsonrpc'] !== '2.0') return undefined;
  const id = body['id'];
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  const method = body['method'];
  if (typeof method !== 'string' || method === 'initialize') return undefined;
  const params = body['params'];
  if (!isPlainObject(params)) return undefined;
  const meta = params['_meta'];
  if (!isPlainObject(meta) || meta[PROTOCOL_VERSION_META_KEY] !== MODERN || RELATED_TASK_META_KEY in meta) return undefined;
  if (request.protocolVersionHeader !== undefined && request.protocolVersionHeader !== MODERN) return undefined;
  if (request.mcpMethodHeader !== undefined && request.mcpMethodHeader !== method) return undefined;
  let text: string;
  if ('progressToken' in meta) {
    const { progressToken, ...rest } = meta;
    if (typeof progressToken !== 'string' && !Number.isSafeInteger(progressToken)) return undefined;
    text = JSON.stringify(rest);
  } else text = JSON.stringify(meta);
  return rememberable(text) ? text : undefined;
}

/**
 * Whether an envelope's text stands for it alone: short, and with no `null`, which is also what
 * JSON.stringify makes of a number JSON.parse could only read as Infinity (`1e400`), which the SDK's
 * schemas refuse where they accept null. Any other value from JSON.parse has one text.
 */
function rememberable(text: string): boolean {
  return text.length <= MAX_ENVELOPE_CHARS && !text.includes('null');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}
