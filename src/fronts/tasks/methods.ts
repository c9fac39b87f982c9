/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension (ext-tasks tasks.md), on the
 * registry. Checks in the order the extension fixes: a client that did not declare the extension on
 * this request gets -32021 before any lookup; then the params; then the task, which another principal
 * never sees (-32602, as for an unknown id). `tasks/update` answers the pending inputs it covers
 * (partial answers are fine; unknown or already answered keys are ignored) and acknowledges with an
 * empty result; `tasks/cancel` cancels the call and acknowledges the same way, also for a task that
 * has already ended.
 */
import { parseInputResponses, type InputResponseMap } from '../../core/calls/input-responses.js';
import { GatewayError, INPUT_RESPONSES_INVALID, ProtocolError, WireCode, invalidParams } from '../../errors.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import type { ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import {
  TASKS_EXTENSION,
  checkTaskParams,
  declaresTasks,
  detailedTaskResult,
  inlinedResult,
  taskAck,
  type TaskSnapshot,
} from '../../protocol/rev-2026-07-28/tasks.js';
import type { RequestContext } from '../dialect.js';
import type { Task, TaskRegistry } from './registry.js';
import type { RemoteTaskIds } from './remote.js';
import type { BackendPort } from '../../core/backend/port.js';
import { META } from '../../protocol/rev-2026-07-28/envelope.js';

export const TASK_METHODS: Readonly<Record<string, true>> = { 'tasks/get': true, 'tasks/update': true, 'tasks/cancel': true };

export interface TaskMethodsDeps {
  readonly registry: TaskRegistry;
  readonly stamp: ResultStamp;
  /** Wrapped ids of tasks 2026-07-28 backends created themselves, and those backends by name. */
  readonly remote: RemoteTaskIds;
  readonly backend: (name: string) => BackendPort | undefined;
  /**
   * Cluster mode: a task of `principal` that another instance held, as last written, when that
   * instance is gone (or cannot be reached): what its `tasks/get` answers from here.
   */
  readonly elsewhere?: ((taskId: string, principal: string) => Promise<TaskSnapshot | undefined>) | undefined;
}

/**
 * The answers in `inputResponses` to inputs the task is waiting for, checked against their methods'
 * result schemas (-32602 when one does not fit). Keys it is not waiting for are ignored, whatever their
 * value (the extension: unknown or already answered keys SHOULD be ignored).
 */
export function answersFor(registry: TaskRegistry, task: Task, inputResponses: unknown): InputResponseMap {
  if (inputResponses === null || typeof inputResponses !== 'object' || Array.isArray(inputResponses)) {
    throw invalidParams('inputResponses must be an object keyed by input request key', INPUT_RESPONSES_INVALID);
  }
  const waiting = new Set(registry.waiting(task).map((p) => p.key));
  const relevant = Object.fromEntries(Object.entries(inputResponses).filter(([key]) => waiting.has(key)));
  const parsed = parseInputResponses(relevant);
  if (!parsed.ok) throw invalidParams(parsed.error, INPUT_RESPONSES_INVALID);
  const answers = parsed.value ?? {};
  const checked = registry.checkAnswers(task, answers);
  if (!checked.ok) throw invalidParams(checked.error, INPUT_RESPONSES_INVALID);
  return answers;
}

export function createTaskMethods(deps: TaskMethodsDeps): (req: FrontRequest, ctx: RequestContext) => Promise<Record<string, unknown>> {
  const { registry, stamp } = deps;
  return async (req, ctx) => {
    if (!declaresTasks(req.capabilities)) {
      throw new ProtocolError(
        WireCode.MissingRequiredClientCapability,
        `Missing required client capability: ${req.method} needs the extension ${TASKS_EXTENSION}`,
        {
          requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
        },
      );
    }
    const { taskId } = checkTaskParams(req.method, req.params);
    if (deps.remote.isRemote(taskId)) {
      // A backend's own task: forwarded to that backend under its own id, answered under ours.
      const target = await deps.remote.unwrap(taskId, ctx.principal);
      const backend = target ? deps.backend(target.backend) : undefined;
      if (!target || !backend?.taskRequest) throw registry.notFound(taskId);
      const params: Record<string, unknown> = { taskId: target.taskId };
      if (req.method === 'tasks/update') params['inputResponses'] = req.params['inputResponses'];
      const r = await backend.taskRequest(req.method, params, ctx.signal, ctx.principal);
      if (req.method !== 'tasks/get') return taskAck(stamp);
      const { resultType: _rt, _meta: _m, ...fields } = r;
      const inlined = fields['result'];
      if (inlined && typeof inlined === 'object' && !Array.isArray(inlined)) fields['result'] = inlinedResult(inlined as Record<string, unknown>);
      return { ...fields, resultType: 'complete', taskId, _meta: { [META.serverInfo]: stamp.serverInfo } };
    }
    const task = registry.get(taskId, ctx.principal);
    if (!task) {
      // Closing: the tasks went with this instance (the others report them failed once it is gone).
      if (registry.closed) throw new GatewayError('gateway_closing');
      // Not in this instance's memory: the cluster store's last state of a task held by an instance that
      // is gone, or of one of this instance's own it forgot (it can no longer change); an owner that
      // cannot be reached but is not known gone rejects instance_unreachable (TasksElsewhere.gone).
      const stored = await deps.elsewhere?.(taskId, ctx.principal);
      if (!stored) throw registry.notFound(taskId);
      return req.method === 'tasks/get' ? detailedTaskResult(stored, stamp) : taskAck(stamp);
    }
    switch (req.method) {
      case 'tasks/get':
        return detailedTaskResult(registry.read(task), stamp);
      case 'tasks/update': {
        registry.answer(task, answersFor(registry, task, req.params['inputResponses']));
        return taskAck(stamp);
      }
      default:
        registry.cancel(task);
        return taskAck(stamp);
    }
  };
}
