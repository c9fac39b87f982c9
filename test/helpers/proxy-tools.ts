/**
 * Calling the proxy tools as a 2026-07-28 client over real HTTP, and reading their answers as seed 000
 * shapes them: the tool's body, then `events_since_last_response`, then `pending_client_action`.
 */
import { post, type WireReply } from './wire.js';

export interface ProxyEvent {
  id: string;
  type: string;
  server: string;
  data: Record<string, unknown>;
}

export interface Parts {
  body: Record<string, unknown>;
  events?: ProxyEvent[];
  pending?: { elicitations: Record<string, unknown>[]; sampling_requests: Record<string, unknown>[] };
  isError: boolean;
  reply: WireReply;
}

/** Splits a proxy tool's answer into the seed's parts. */
export function split(reply: WireReply): Parts {
  const result = reply.message['result'] as { content?: { text: string }[]; isError?: boolean; resultType?: string } | undefined;
  if (!result?.content) return { body: (result ?? reply.message) as Record<string, unknown>, isError: false, reply };
  const [first, ...rest] = result.content.map((c) => JSON.parse(c.text) as Record<string, unknown>);
  const parts: Parts = { body: first!, isError: result.isError === true, reply };
  for (const r of rest) {
    if (r['events_since_last_response']) parts.events = r['events_since_last_response'] as NonNullable<Parts['events']>;
    if (r['pending_client_action']) parts.pending = r['pending_client_action'] as NonNullable<Parts['pending']>;
  }
  return parts;
}

/** The events an await_activity answer delivered. */
export function awaitedEvents(r: Parts): ProxyEvent[] {
  return ((r.body['events'] ?? []) as { events: ProxyEvent[] }[]).flatMap((g) => g.events);
}

/** The event types an await_activity answer delivered. */
export function eventTypes(r: Parts): string[] {
  return awaitedEvents(r).map((e) => e.type);
}

/**
 * Calls `next` (it answers the event types it saw) until `type` is among them, or `ms` pass (generous:
 * one `next` may itself wait out an await_activity timeout on a loaded machine); every type seen.
 */
export async function eventsUntil(type: string, next: () => Promise<string[]>, ms = 30_000): Promise<string[]> {
  const seen: string[] = [];
  const deadline = Date.now() + ms;
  while (!seen.includes(type) && Date.now() < deadline) seen.push(...(await next()));
  return seen;
}

export interface ToolCaller {
  (name: string, args?: Record<string, unknown>, opts?: { caps?: Record<string, unknown>; meta?: Record<string, unknown> }): Promise<Parts>;
  /** Every event delivered to this caller so far (in any answer: events are delivered once), oldest first. */
  readonly seen: ProxyEvent[];
}

/** A caller of the proxy tools at `url` as the principal of `key` (none: the anonymous principal) that records what it is delivered. */
export function proxyCaller(url: string, key?: string): ToolCaller {
  const seen: ProxyEvent[] = [];
  const call = async (name: string, args: Record<string, unknown> = {}, opts: { caps?: Record<string, unknown>; meta?: Record<string, unknown> } = {}) => {
    const parts = split(
      await post(
        url,
        'tools/call',
        { name, arguments: args },
        { caps: opts.caps ?? {}, ...(opts.meta ? { meta: opts.meta } : {}), headers: key ? { authorization: `Bearer ${key}` } : {} },
      ),
    );
    seen.push(...(parts.events ?? []), ...(name === 'await_activity' ? awaitedEvents(parts) : []));
    return parts;
  };
  return Object.assign(call, { seen });
}

/**
 * Waits (calling await_activity) until the caller has been delivered an event of `type` matching
 * `where`, within `ms`; returns every event delivered so far, that one last. Throws when none comes.
 */
export async function eventOf(call: ToolCaller, type: string, where: (e: ProxyEvent) => boolean = () => true, ms = 10_000): Promise<ProxyEvent[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const at = call.seen.findIndex((e) => e.type === type && where(e));
    if (at >= 0) return call.seen.slice(0, at + 1);
    if (Date.now() >= deadline) break;
    await call('await_activity', { timeout_ms: Math.max(1, Math.min(2_000, deadline - Date.now())) });
  }
  throw new Error(`no ${type} event within ${ms} ms; saw ${call.seen.map((e) => e.type).join(', ') || 'none'}`);
}
