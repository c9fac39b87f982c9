/**
 * `subscriptions/listen` (basic/patterns/subscriptions.mdx): a long-lived stream of the list-changed
 * notifications the client opted into. The first message acknowledges the honoured subset; every
 * notification carries `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request's id;
 * when the gateway shuts down it ends the stream with a final result. Only list changes a backend
 * announces are honoured (resource subscriptions are not offered).
 */
import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { Quotas } from '../../cluster/quotas.js';
import { createShares, type Shares } from '../../cluster/shares.js';
import type { Catalog } from '../../core/catalog.js';
import type { EventBus, ListChange } from '../../core/events.js';
import { invalidParams, limitError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { background } from '../../util/background.js';
import { anySignal, raceSignal } from '../../util/abort.js';
import type { UpstreamFollow } from '../../core/backend/port.js';
import { META, type FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import type { ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { TASKS_EXTENSION, declaresTasks, detailedTask, isTerminal, type TaskSnapshot } from '../../protocol/rev-2026-07-28/tasks.js';
import { ProtocolError, WireCode } from '../../errors.js';
import type { ListenSession, RequestContext } from '../dialect.js';
import type { TasksElsewhere } from '../tasks/elsewhere.js';
import { visibleState, type Task, type TaskRegistry } from '../tasks/registry.js';
import { gatewayCapabilities } from './server-capabilities.js';

/** How long a listen request waits for the backends it follows to acknowledge their streams. */
const UPSTREAM_ACK_MS = 10_000;
const FILTER: Record<ListChange, string> = { tools: 'toolsListChanged', prompts: 'promptsListChanged', resources: 'resourcesListChanged' };

export interface ListenDeps {
  readonly catalog: Catalog;
  readonly events: EventBus;
  readonly stamp: ResultStamp;
  readonly quotas: Quotas;
  /** How the bounds below are counted (default: over `quotas`, counted here when they fail). */
  readonly shares?: Shares | undefined;
  /** Where a refused stream is logged. */
  readonly logger?: Logger | undefined;
  /** Open listen streams allowed per principal and in total (each holds a connection). */
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  /** Where `notifications.taskIds` are looked up (tasks extension). */
  readonly tasks: TaskRegistry;
  /** Cluster mode: tasks another instance holds, followed through the cluster's task store. */
  readonly elsewhere?: TasksElsewhere | undefined;
  /**
   * The backends' own list changes, followed for one stream alone until `signal` aborts (the edge
   * handler: its streams share nothing between requests, so no bus carries them); resolves once every
   * backend has acknowledged (or failed), so a change made after this stream's acknowledgement is seen.
   */
  readonly upstream?:
    ((kinds: ReadonlySet<ListChange>, onChange: (kind: ListChange) => void, signal: AbortSignal, follow: UpstreamFollow) => Promise<void>) | undefined;
  /** The backends whose list changes this dialect relays (a session core's `<path>/<name>`: that one); default all. */
  readonly backends?: ReadonlySet<string> | undefined;
}

/** The most task ids one listen stream may follow. */
const MAX_TASK_IDS = 256;

export function createListen(deps: ListenDeps): (req: FrontRequest, ctx: RequestContext) => Promise<ListenSession> {
  const shares = deps.shares ?? createShares(deps.quotas);
  return async (req, ctx) => {
    const requested = req.params['notifications'];
    if (requested !== undefined && (typeof requested !== 'object' || requested === null || Array.isArray(requested))) {
      throw invalidParams('params.notifications must be an object');
    }
    const want = (requested ?? {}) as Record<string, unknown>;
    const caps = await gatewayCapabilities(deps.catalog);
    const honoured = new Set<ListChange>();
    for (const kind of Object.keys(FILTER) as ListChange[]) {
      if (want[FILTER[kind]] === true && caps[kind]?.['listChanged'] === true) honoured.add(kind);
    }
    // Tasks extension: `taskIds` follows the caller's own tasks (`notifications/tasks` on each change).
    const tasks: Task[] = [];
    const remote: string[] = [];
    if (want['taskIds'] !== undefined) {
      if (!declaresTasks(req.capabilities)) {
        throw new ProtocolError(
          WireCode.MissingRequiredClientCapability,
          `Missing required client capability: taskIds needs the extension ${TASKS_EXTENSION}`,
          {
            requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
          },
        );
      }
      const ids = want['taskIds'];
      if (!Array.isArray(ids) || ids.length > MAX_TASK_IDS || !ids.every((i) => typeof i === 'string')) {
        throw invalidParams(`params.notifications.taskIds must be an array of at most ${MAX_TASK_IDS} task ids`);
      }
      // Unknown ids and other principals' tasks are left out of the acknowledgement, silently.
      for (const id of new Set(ids as string[])) {
        const task = deps.tasks.get(id, ctx.principal);
        if (task) tasks.push(task);
        else if (deps.elsewhere && (await deps.elsewhere.load(id, ctx.principal))) remote.push(id);
      }
    }
    const tag = { [SUBSCRIPTION_ID_META_KEY]: req.id };
    const held = await shares.take(ctx.principal, { kind: 'listen', perPrincipal: deps.maxPerPrincipal, total: deps.maxTotal });
    if (!held.ok) {
      const limit = held.whose === 'principal' ? 'gateway.maxListenPerPrincipal' : 'gateway.maxListenTotal';
      deps.logger?.info({ principal: ctx.principal, limit }, 'subscriptions/listen refused: limit reached');
      throw limitError({
        whose: held.whose,
        what: 'subscriptions/listen streams',
        limit,
        max: held.whose === 'principal' ? deps.maxPerPrincipal : deps.maxTotal,
        free: 'close one of its open listen streams first',
      });
    }
    const upstream = new AbortController();
    let deliver: ((kind: ListChange) => void) | undefined;
    let lost: (() => void) | undefined;
    if (deps.upstream && honoured.size > 0) {
      // The backends' acknowledgements, waited for as long as this request lasts, LIST_ACK_MS at most
      // (a backend that never acknowledges is not followed; the stream goes on without it).
      const follow = { principal: ctx.principal, onEnd: () => lost?.() };
      try {
        await raceSignal(
          deps.upstream(honoured, (kind) => deliver?.(kind), upstream.signal, follow),
          anySignal([ctx.signal, AbortSignal.timeout(UPSTREAM_ACK_MS)]),
        ).catch((e: unknown) => {
          if (ctx.signal.aborted) throw e;
        });
      } catch (e) {
        upstream.abort();
        background('release a listen stream share', held.release(), deps.logger);
        throw e;
      }
    }
    const notifications: Record<string, boolean> = {};
    for (const kind of honoured) notifications[FILTER[kind]] = true;
    const ackNotifications: Record<string, unknown> = { ...notifications };
    if (want['taskIds'] !== undefined) ackNotifications['taskIds'] = [...tasks.map((t) => t.id), ...remote];
    return {
      id: req.id,
      ack: { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ackNotifications, _meta: tag } },
      final: { jsonrpc: '2.0', id: req.id, result: { resultType: 'complete', _meta: { ...tag, [META.serverInfo]: deps.stamp.serverInfo } } },
      attach(send, onEnd) {
        lost = onEnd;
        deliver = (kind) => {
          if (honoured.has(kind)) send({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed`, params: { _meta: tag } });
        };
        const only = deps.backends;
        const offChange = deps.events.onListChanged((kind, backend) => {
          if (!only || only.has(backend)) deliver?.(kind);
        });
        const offClose = deps.events.onClose(onEnd);
        const following = new AbortController();
        const notify = (snap: TaskSnapshot): void => send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...detailedTask(snap), _meta: tag } });
        for (const task of tasks) background('follow a task on a listen stream', () => followTask(deps.tasks, task, following.signal, notify), deps.logger);
        const { elsewhere } = deps;
        if (elsewhere) {
          for (const id of remote)
            background("follow another instance's task on a listen stream", () => elsewhere.follow(id, ctx.principal, following.signal, notify), deps.logger);
        }
        return () => {
          following.abort();
          upstream.abort();
          offChange();
          offClose();
          background('release a listen stream share', held.release(), deps.logger);
        };
      },
    };
  };
}

/**
 * Sends the task's state now and after every visible change (status, or the set of input requests),
 * until it has ended or `signal` aborts. Never throws.
 */
async function followTask(registry: TaskRegistry, task: Task, signal: AbortSignal, send: (snap: TaskSnapshot) => void): Promise<void> {
  let last = '';
  for (;;) {
    const snap = registry.snapshot(task);
    const seen = visibleState(snap);
    if (seen !== last) {
      last = seen;
      send(snap);
    }
    if (isTerminal(snap.status) || signal.aborted) return;
    try {
      await registry.nextChange(task, signal);
    } catch {
      return; // the stream went away
    }
  }
}
