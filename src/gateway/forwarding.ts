/**
 * Forwarding between the instances of a cluster (with `MCP_GATEWAY_CLUSTER_SECRET`): a retry or task
 * request for what another live instance holds is forwarded there, and so are requests for a legacy
 * session another live instance holds. An answer streaming back through this instance counts as a
 * request in flight (a drain waits for it), but a legacy session's GET stream: a client resumes it
 * elsewhere with Last-Event-ID. An answer cut by its owner (it died) ends here cleanly, with a log
 * line rather than a stack; what was on its way to an instance taken for dead is answered at once, as
 * cut (it may have run there), and a client that leaves is not taken for an unreachable owner.
 * Each forward is a client span of the request's trace (`forwardSpan`), which the owner's span joins.
 */
import type { RedisCluster } from '../cluster/redis/cluster.js';
import { RETURNED, createForwarder, type ForwardAnswer } from '../cluster/forwarder.js';
import { createForwardWatch } from '../cluster/forward-watch.js';
import { cameBackWhole, createNodeForwardTransport } from './forward-transport.js';
import { createForwardChannels, type ChannelCallOut } from './forward-channel.js';
import type { Caller } from '../fronts/dialect.js';
import { errorResponseFor } from '../cluster/forward-answer.js';
import type { CallEngine } from '../core/calls/call-engine.js';
import { createSessionRouting } from '../fronts/legacy/session-routing.js';
import { isProxyTool } from '../fronts/proxy/tools.js';
import { createRetryRouting, type RetryRouting } from '../fronts/retry-routing.js';
import type { Forwarding } from '../http/app-options.js';
import type { Logger } from '../log.js';
import type { RequestStateCodec } from '../protocol/request-state.js';
import { GatewayError } from '../errors.js';
import { untilEnd } from '../util/stream-end.js';
import type { Metrics } from '../observe/metrics.js';
import { SpanKind, injectTraceparent, markFailed, startSpan, tracingOn } from '../util/tracing.js';
import type { Lifecycle } from './lifecycle.js';
import type { CancelSource } from '../util/lifeline.js';

export interface ClusterForwardingDeps {
  readonly cluster: RedisCluster;
  readonly secret: string;
  readonly instanceId: string;
  readonly codec: RequestStateCodec;
  readonly engine: CallEngine;
  readonly life: Lifecycle;
  /** With the proxy tools on: their calls go to the principal's home instance. */
  readonly proxyTools: boolean;
  readonly logger: Logger;
  /** Counts forwards sent (answered, unreachable, cut, client_gone, …) and received (accepted, forbidden, replayed). */
  readonly metrics?: Metrics | undefined;
}

export interface ClusterForwarding {
  readonly forward: Forwarding;
  /** The internal path's checks, uncounted (a channel's CONNECT counts its own refusals, and then each call it carries). */
  readonly checks: Pick<Forwarding, 'precheck' | 'verify' | 'answerHeader'>;
  readonly routing: RetryRouting;
  /** Ends the forwards in flight and closes the connections to the other instances. */
  close(): void;
}

/**
 * How long an instance's internal URL is taken from memory before Redis is asked again: a forward
 * costs one round trip less. An instance known gone is forgotten at once; one that died unnoticed
 * cannot be reached, and its request is served here as before.
 */
const URL_MEMORY_MS = 5_000;

export function createClusterForwarding(deps: ClusterForwardingDeps): ClusterForwarding {
  const { cluster, instanceId, life, logger } = deps;
  const members = cluster.instances;
  const anyServing = (): Promise<string | undefined> => members.anyServing().catch(() => undefined);
  /** A standing instance's internal URL ('' when it gave none), undefined once it is known gone; remembered a few seconds. */
  const urls = new Map<string, { url: string; until: number }>();
  /** How many times each instance was known gone: a lookup that was under way then is not remembered. */
  const goneCount = new Map<string, number>();
  const standing = async (id: string): Promise<string | undefined> => {
    const known = urls.get(id);
    if (known && known.until > Date.now()) return known.url;
    const seen = goneCount.get(id) ?? 0;
    const url = await members.urlOf(id);
    if (url !== undefined && (goneCount.get(id) ?? 0) === seen) urls.set(id, { url, until: Date.now() + URL_MEMORY_MS });
    else urls.delete(id);
    return url;
  };
  // Answered from the URLs remembered for forwarding: an instance known gone is forgotten at once.
  const alive = async (id: string): Promise<boolean> => (await standing(id)) !== undefined;
  const urlOf = async (id: string): Promise<string | undefined> => (await standing(id)) || undefined;
  const transport = createNodeForwardTransport((error) =>
    logger.warn({ err: error.message }, 'a forwarded answer was cut by the instance that sent it: the client is told so'),
  );
  const forwarder = createForwarder({ secret: deps.secret, urlOf, instanceId, transport: transport.send });
  const channels = createForwardChannels({
    secret: deps.secret,
    urlOf,
    head: (owner, forBoot) => forwarder.channelHead(owner, forBoot),
    heard: (owner, boot) => forwarder.heard(owner, boot),
    onCut: (error) => logger.warn({ err: error.message }, 'a forwarded answer was cut by the instance that sent it: the client is told so'),
    onOpen: (owner) => logger.info({ instance: owner }, 'a channel to this instance is open: forwarded calls go on it'),
    onUnavailable: (owner, why, forMs) =>
      logger.info({ instance: owner, why, seconds: forMs / 1000 }, 'no channel to this instance: forwards to it go over HTTP for a while'),
  });
  const watch = createForwardWatch();
  members.onGone((id) => {
    urls.delete(id);
    forwarder.forget(id);
    channels.forget(id);
    goneCount.set(id, (goneCount.get(id) ?? 0) + 1);
    const waiting = watch.waiting(id);
    if (waiting > 0) logger.warn({ instance: id, requests: waiting }, 'an instance is gone: the requests forwarded to it are answered here');
    else logger.info({ instance: id }, 'an instance is gone (its heartbeat lapsed): retries of its calls are told they are gone');
    watch.gone(id);
  });
  const sending: SendContext = { life, watch, forwarder, channels, logger, metrics: deps.metrics, forgetUrl: (id) => urls.delete(id) };
  const forward: Forwarding = {
    ...forwarder,
    precheck(req) {
      const verdict = forwarder.precheck(req);
      if (!verdict.ok) deps.metrics?.forward('received', verdict.error);
      return verdict;
    },
    async verify(req, body) {
      const verdict = await forwarder.verify(req, body);
      deps.metrics?.forward('received', verdict.ok ? 'accepted' : verdict.error);
      return verdict;
    },
    sessionOwner: createSessionRouting({ instanceId, alive, stopping: life.stopping, anyServing }),
    send: (owner, target, req, body, answered, caller) => sendForward(sending, owner, target, req, body, answered, caller),
  };
  const routing = createRetryRouting({
    instanceId,
    codec: deps.codec,
    alive,
    stopping: life.stopping,
    anyServing,
    ...(deps.proxyTools
      ? { proxy: { isTool: isProxyTool, homeOf: (principal: string, claimant: string | undefined) => cluster.homes.homeOf(principal, claimant) } }
      : {}),
  });
  return {
    forward,
    checks: forwarder,
    routing,
    close: () => {
      channels.close();
      transport.close();
    },
  };
}

/** What sending one forward needs of the cluster's forwarding. */
interface SendContext {
  readonly life: Lifecycle;
  readonly watch: ReturnType<typeof createForwardWatch>;
  readonly forwarder: ReturnType<typeof createForwarder>;
  readonly channels: ReturnType<typeof createForwardChannels>;
  readonly logger: Logger;
  readonly metrics: Metrics | undefined;
  /** Forgets an instance's remembered URL (asked again next time: it may have restarted elsewhere). */
  forgetUrl(owner: string): void;
}

/** `Forwarding.send`: one request to `owner`, on its channel or over HTTP; its answer, or undefined to serve it here. */
async function sendForward(
  ctx: SendContext,
  owner: string,
  target: string,
  req: Request,
  body: string | undefined,
  answered: CancelSource | undefined,
  caller: Caller | undefined,
): Promise<Response | undefined> {
  const { logger, metrics } = ctx;
  const leave = req.method !== 'GET' ? ctx.life.enter() : () => undefined;
  // Aborted with the client (its answer's lifeline: no AbortSignal of the adapter's made for it), or
  // as soon as the owner is known dead (it may never answer).
  const watched = ctx.watch.track(owner, answered ?? req.signal);
  const span = forwardSpan(owner, req);
  const ended = (failure?: string): void => {
    leave();
    watched.dispose();
    span.end(failure);
  };
  const given = givenUp(owner, logger);
  let res: Response | undefined;
  /** The answer came back whole (JSON read as text): nothing to wait for. */
  let whole = false;
  /** The channel closed with it on its way: answered here, `forward_cut`. */
  let cut = false;
  try {
    // On the channel when it can carry it (a POST whose caller passed the gate here); else over HTTP.
    const onChannel =
      caller && req.method === 'POST' ? await ctx.channels.send(owner, channelCall(target, caller, span.headers, body), watched.life) : undefined;
    if (onChannel) {
      whole = typeof onChannel.body === 'string';
      cut = onChannel.cut === true;
      res = responseOf(onChannel);
    } else {
      const sent = {
        method: req.method,
        headers: span.headers,
        signal: watched.life.signal,
        onMisdirected: given.onMisdirected,
        onRefused: given.onRefused,
      };
      res = await ctx.forwarder.send(owner, target, sent, body);
    }
  } catch (e) {
    if (!watched.life.aborted) {
      ended(e instanceof GatewayError ? e.code : 'forward_failed');
      metrics?.forward('sent', 'failed');
      throw e;
    }
    const outcome = abortedOnItsWay(req.method, (answered ?? req.signal).aborted, body);
    ended(outcome.failure);
    metrics?.forward('sent', outcome.counted);
    if (outcome.counted === 'cut')
      logger.warn({ instance: owner }, 'the instance that holds this request was taken for gone while it was on its way: the client is told it may have run');
    return outcome.answer;
  }
  metrics?.forward('sent', cut ? 'cut' : res ? 'answered' : (given.why ?? 'unreachable'));
  if (!res && !given.why) {
    ctx.forgetUrl(owner); // asked again next time: it may have restarted elsewhere
    logger.warn({ instance: owner }, 'the instance that holds this request could not be reached: served here');
  }
  // A JSON answer came back whole: nothing to wait for (and its body is not made a stream).
  if (!res || whole || cameBackWhole(res) || !res.body) {
    ended(res ? undefined : given.why === 'misdirected' ? 'misdirected' : given.why === 'refused' ? 'forward_refused' : 'instance_unreachable');
    return res;
  }
  const stream = untilEnd(res.body, (error) => {
    ended(error ? 'forward_cut' : undefined);
    if (error) logger.warn({ instance: owner, err: error.message }, 'a forwarded answer was cut by the instance that sent it');
  });
  return new Response(stream, { status: res.status, headers: res.headers });
}

/** The request headers a call on a channel carries (its caller is carried as such: no `Authorization`). */
const CHANNEL_HEADERS = ['content-type', 'accept', 'mcp-protocol-version', 'mcp-method', 'mcp-name', 'traceparent'];

/** A POST forwarded on a channel: its public path, caller, the headers that travel with it and its body. */
function channelCall(path: string, caller: Caller, headers: Pick<Headers, 'get' | 'forEach'>, body: string | undefined): ChannelCallOut {
  const carried: Record<string, string> = {};
  for (const name of CHANNEL_HEADERS) {
    const v = headers.get(name);
    if (v !== null) carried[name] = v;
  }
  headers.forEach((v, name) => {
    if (name.startsWith('mcp-param-')) carried[name] = v;
  });
  return { path, principal: caller.principal, scopes: caller.tokenScopes, headers: carried, body: body ?? '' };
}

/** A channel's answer as the Response handed to the client (the headers that travel back, as a record: no `Headers` made for them). */
function responseOf(answer: ForwardAnswer): Response {
  const headers: Record<string, string> = {};
  for (const name of RETURNED) {
    const v = answer.headers.get(name);
    if (v !== null) headers[name] = v;
  }
  return new Response(answer.body, { status: answer.status, headers });
}

/**
 * Why the forwarder gave up on a forward to `owner` it sent (the request is then served here), logged:
 * refused as misdirected twice, or refused for its signature by the owner's internal path.
 */
function givenUp(owner: string, logger: Logger) {
  const state: {
    why: 'misdirected' | 'refused' | undefined;
    onMisdirected(boots: { signed: string | undefined; heard: string | null }): void;
    onRefused(why: string): void;
  } = {
    why: undefined,
    onMisdirected(boots) {
      state.why = 'misdirected';
      // Boot ids are not secrets (every answer to a forward carries one).
      logger.warn(
        { instance: owner, signedFor: boots.signed, heard: boots.heard },
        'the instance that holds this request refused it as misdirected twice: served here (does its internal URL reach that one process only?)',
      );
    },
    onRefused(why) {
      state.why = 'refused';
      logger.warn(
        { instance: owner, why },
        'the instance that holds this request refused its forward: served here (the same MCP_GATEWAY_CLUSTER_SECRET and version on every instance?)',
      );
    },
  };
  return state;
}

/**
 * The client span of one forward (issue 28, tracing): `mcp forward`, child of the request's span, with
 * the instance it goes to; the forwarded request's headers carry its `traceparent` (signed with them:
 * cluster/forwarder.ts), never the client's own. Ends with the answer's stream (failed: unreachable, cut).
 */
function forwardSpan(owner: string, req: Request): { headers: Pick<Headers, 'get' | 'forEach'>; end(failure?: string): void } {
  // Untraced: the request's own headers, never its client's traceparent (nothing here to join).
  if (!tracingOn()) return { headers: withoutTraceparent(req.headers), end: () => undefined };
  const { span, context } = startSpan('mcp forward', {
    kind: SpanKind.CLIENT,
    attributes: { 'mcp.forward.instance': owner, 'http.request.method': req.method },
  });
  const headers = new Headers(req.headers);
  headers.delete('traceparent');
  injectTraceparent(headers, context);
  let ended = false;
  return {
    headers,
    end(failure) {
      if (ended) return;
      ended = true;
      if (failure !== undefined) markFailed(span, undefined, { 'mcp.error.reason': failure });
      span.end();
    },
  };
}

/** `headers` as the forwarder reads them, with no `traceparent`. */
function withoutTraceparent(headers: Headers): Pick<Headers, 'get' | 'forEach'> {
  return {
    get: (name) => (name.toLowerCase() === 'traceparent' ? null : headers.get(name)),
    forEach: (fn) =>
      headers.forEach((value, name, all) => {
        if (name !== 'traceparent') fn(value, name, all);
      }),
  };
}

/**
 * A forward aborted on its way: the client left (nobody reads an answer), or the owner was taken for
 * gone while it may have the request (frozen, cut off): a POST's client is told it may have run
 * (`forward_cut`), never that the call is gone (the owner may still finish it); a legacy session's
 * GET stream or DELETE runs nothing, and is served here (its session is not found).
 */
function abortedOnItsWay(
  method: string,
  clientLeft: boolean,
  body: string | undefined,
): { failure: string; counted: 'client_gone' | 'cut' | 'unreachable'; answer: Response | undefined } {
  if (!clientLeft && method !== 'POST') return { failure: 'instance_gone', counted: 'unreachable', answer: undefined };
  const answer = errorResponseFor(body, 'forward_cut');
  return clientLeft ? { failure: 'client_gone', counted: 'client_gone', answer } : { failure: 'forward_cut', counted: 'cut', answer };
}
