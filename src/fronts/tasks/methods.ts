/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension (ext-tasks tasks.md), on the
 * registry. Checks in the order the extension fixes: a client that did not declare the extension on
 * this request gets -32021 before any lookup; then the params; then the task, which another principal
 * never sees (-32602, as for an unknown id). `tasks/update` answers the pending inputs it covers
 * (partial answers are fine; unknown or already answered keys are ignored) and acknowledges with an
 * empty result; `tasks/cancel` cancels the call and acknowledges the same way, also for a task that
 * has already ended.
 */
import { parseInputResponses } from '../../core/calls/input-responses.js';
import { ProtocolError, WireCode, invalidParams } from '../../errors.js';
import type { FrontRequest } from '../../protocol/rev-2026-07-28/envelope.js';
import type { ResultStamp } from '../../protocol/rev-2026-07-28/results.js';
import { TASKS_EXTENSION, checkTaskParams, declaresTasks, detailedTaskResult, taskAck } from '../../protocol/rev-2026-07-28/tasks.js';
import type { RequestContext } from '../dialect.js';
import type { TaskRegistry } from './registry.js';

export const TASK_METHODS: Readonly<Record<string, true>> = { 'tasks/get': true, 'tasks/update': true, 'tasks/cancel': true };

export interface TaskMethodsDeps {
  readonly registry: TaskRegistry;
  readonly stamp: ResultStamp;
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
    const task = registry.get(taskId, ctx.principal);
    if (!task) throw invalidParams(`Task not found: ${taskId.slice(0, 200)} (unknown, expired, or not yours)`, { taskId: taskId.slice(0, 200) });
    switch (req.method) {
      case 'tasks/get':
        return detailedTaskResult(registry.snapshot(task), stamp);
      case 'tasks/update': {
        const parsed = parseInputResponses(req.params['inputResponses']);
        if (!parsed.ok) throw invalidParams(parsed.error);
        // Only answers to what the task is waiting for count; the rest is ignored, malformed or not.
        const waiting = new Set(task.call.pending.map((p) => p.key));
        const relevant = Object.fromEntries(Object.entries(parsed.value ?? {}).filter(([key]) => waiting.has(key)));
        const checked = task.call.checkAnswers(relevant);
        if (!checked.ok) throw invalidParams(checked.error);
        task.call.answer(relevant);
        return taskAck(stamp);
      }
      default:
        registry.cancel(task);
        return taskAck(stamp);
    }
  };
}
