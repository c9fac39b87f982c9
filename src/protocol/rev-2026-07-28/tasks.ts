/**
 * The wire of the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663; ext-tasks
 * specification/draft/tasks.md, schema/draft/schema.ts): the extension id, the `Task` fields, the flat
 * `CreateTaskResult` (`resultType: "task"`), the `DetailedTask` of `tasks/get`, the empty acks of
 * `tasks/update` / `tasks/cancel`, and the params checks of the three methods. The SDK (2.4.0) has only
 * the 2025-11-25 task vocabulary (nested `task`, `ttl`, `pollInterval`), so these shapes live here.
 */
import * as z from 'zod/v4';
import { invalidParams } from '../../errors.js';
import { META } from './envelope.js';
import type { ResultStamp } from './results.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** `_meta` key a 2025-11-25 server puts on a task's result (`tasks/result`); never inlined into a 2026 task. */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** True for the statuses a task never leaves. */
export function isTerminal(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** What a task looks like at one moment, before it goes on the wire. */
export interface TaskSnapshot {
  readonly taskId: string;
  readonly status: TaskStatus;
  readonly statusMessage?: string | undefined;
  readonly createdAt: number;
  readonly lastUpdatedAt: number;
  readonly ttlMs: number | null;
  readonly pollIntervalMs?: number | undefined;
  /** Outstanding input requests (status `input_required`). */
  readonly inputRequests?: Readonly<Record<string, unknown>> | undefined;
  /**
   * The original method's result (status `completed`), tool errors (`isError`) included, as the backend
   * gave it (a legacy backend's has no `resultType`; `detailedTask` makes it a full 2026-07-28 result).
   */
  readonly result?: Record<string, unknown> | undefined;
  /** A JSON-RPC error object (status `failed`). */
  readonly error?: { code: number; message: string; data?: unknown } | undefined;
}

/** True when the request's capabilities declare the tasks extension. */
export function declaresTasks(capabilities: Readonly<Record<string, unknown>>): boolean {
  const ext = capabilities['extensions'];
  return ext !== null && typeof ext === 'object' && !Array.isArray(ext) && Object.hasOwn(ext, TASKS_EXTENSION);
}

/** The capabilities without the tasks extension (for a front that serves no tasks, whatever its client declared). */
export function withoutTasksExtension(capabilities: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (!declaresTasks(capabilities)) return { ...capabilities };
  const { [TASKS_EXTENSION]: _tasks, ...others } = capabilities['extensions'] as Record<string, unknown>;
  const { extensions: _all, ...rest } = capabilities;
  return Object.keys(others).length > 0 ? { ...rest, extensions: others } : rest;
}

function taskFields(t: TaskSnapshot): Record<string, unknown> {
  const out: Record<string, unknown> = {
    taskId: t.taskId,
    status: t.status,
    createdAt: new Date(t.createdAt).toISOString(),
    lastUpdatedAt: new Date(t.lastUpdatedAt).toISOString(),
    ttlMs: t.ttlMs,
  };
  if (t.statusMessage !== undefined) out['statusMessage'] = t.statusMessage;
  if (t.pollIntervalMs !== undefined) out['pollIntervalMs'] = t.pollIntervalMs;
  return out;
}

/** The flat `CreateTaskResult`: the task's fields only (never a result, error, inputRequests or requestState). */
export function createTaskResult(t: TaskSnapshot, stamp: ResultStamp): Record<string, unknown> {
  return { resultType: 'task', ...taskFields(t), _meta: { [META.serverInfo]: stamp.serverInfo } };
}

/** A `DetailedTask`: the task plus what its status carries (`inputRequests`, `result` or `error`). */
export function detailedTask(t: TaskSnapshot): Record<string, unknown> {
  const out: Record<string, unknown> = taskFields(t);
  if (t.status === 'input_required') out['inputRequests'] = t.inputRequests ?? {};
  if (t.status === 'completed' && t.result) out['result'] = inlinedResult(t.result);
  if (t.status === 'failed' && t.error) out['error'] = t.error;
  return out;
}

/** The fields of the extension's `Task` (what a `CreateTaskResult` carries besides `resultType` and `_meta`). */
const TASK_FIELDS = ['status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs'] as const;

/**
 * A backend's own `CreateTaskResult`, passed on under `taskId` (the gateway's wrapped id): its Task
 * fields only (a server SDK may add others, such as an empty `content`), and the gateway's `_meta`.
 */
export function relayedTaskResult(backendResult: Readonly<Record<string, unknown>>, taskId: string, stamp: ResultStamp): Record<string, unknown> {
  const fields = Object.fromEntries(TASK_FIELDS.filter((k) => backendResult[k] !== undefined).map((k) => [k, backendResult[k]]));
  return { ...fields, resultType: 'task', taskId, _meta: { [META.serverInfo]: stamp.serverInfo } };
}

/** The `tasks/get` result: `resultType: "complete"` and the `DetailedTask`. */
export function detailedTaskResult(t: TaskSnapshot, stamp: ResultStamp): Record<string, unknown> {
  return { resultType: 'complete', ...detailedTask(t), _meta: { [META.serverInfo]: stamp.serverInfo } };
}

/** The empty acknowledgement of `tasks/update` and `tasks/cancel`. */
export function taskAck(stamp: ResultStamp): Record<string, unknown> {
  return { resultType: 'complete', _meta: { [META.serverInfo]: stamp.serverInfo } };
}

/**
 * A completed task's `result` as the extension has it: a full 2026-07-28 result of the original request
 * (tasks.md "completed": what `tools/call` would have answered), so `resultType: "complete"` unless the
 * backend already gave one, and without the 2025-11-25 related-task `_meta` key. Used wherever a
 * completed task is shown (`tasks/get`, `notifications/tasks`, a task read from the cluster store,
 * a 2026-07-28 backend's own task), so a snapshot written by any instance reads the same.
 */
export function inlinedResult(result: Record<string, unknown>): Record<string, unknown> {
  const stripped = withoutRelatedTask(result);
  return typeof stripped['resultType'] === 'string' ? stripped : { resultType: 'complete', ...stripped };
}

/** A result without the 2025-11-25 related-task `_meta` key (and without `_meta` when that was all). */
export function withoutRelatedTask(result: Record<string, unknown>): Record<string, unknown> {
  const meta = result['_meta'];
  if (!meta || typeof meta !== 'object' || !Object.hasOwn(meta, RELATED_TASK_META)) return result;
  const { [RELATED_TASK_META]: _dropped, ...rest } = meta as Record<string, unknown>;
  const { _meta: _old, ...fields } = result;
  return Object.keys(rest).length > 0 ? { ...fields, _meta: rest } : fields;
}

const taskId = z.string().min(1).max(512);
const SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  'tasks/get': z.looseObject({ taskId }),
  'tasks/cancel': z.looseObject({ taskId }),
  'tasks/update': z.looseObject({ taskId, inputResponses: z.record(z.string(), z.unknown()) }),
};

/** Throws -32602 naming the first problem when the params of a `tasks/*` method are malformed. */
export function checkTaskParams(method: string, params: Record<string, unknown>): { taskId: string } {
  const schema = SCHEMAS[method];
  if (!schema) throw invalidParams(`Unknown tasks method ${method}`);
  const r = schema.safeParse(params);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw invalidParams(`Invalid params: ${issue ? issue.path.map(String).join('.') || 'params' : 'params'}: ${issue?.message ?? 'invalid'}`);
  }
  return { taskId: params['taskId'] as string };
}
