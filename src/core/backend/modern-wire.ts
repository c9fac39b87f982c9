/**
 * What a 2026-07-28 backend's answers and capabilities mean to the gateway (modern-backend.ts): a result
 * as a call's outcome, and the tasks extension added to or taken from the capabilities sent along.
 */
import { TASKS_EXTENSION } from './task-leg.js';
import type { BackendOutcome } from './port.js';

/** A backend result as an outcome: `input_required` keeps the backend's state, `task` is its own task. */
export function outcomeOf(result: Record<string, unknown>): BackendOutcome {
  const { resultType, ...rest } = result;
  if (resultType === 'input_required') {
    const state = rest['requestState'];
    return {
      kind: 'input_required',
      inputRequests: (rest['inputRequests'] as Record<string, unknown> | undefined) ?? {},
      requestState: typeof state === 'string' ? state : undefined,
    };
  }
  if (resultType === 'task') return { kind: 'task', result: rest };
  return { kind: 'complete', result: rest };
}

/** The capabilities with the tasks extension declared. */
export function withTasksExtension(capabilities: Record<string, unknown>): Record<string, unknown> {
  const ext = (capabilities['extensions'] as Record<string, unknown> | undefined) ?? {};
  return { ...capabilities, extensions: { ...ext, [TASKS_EXTENSION]: {} } };
}

/** The caller's capabilities without the tasks extension (the SDK client cannot read a task answer). */
export function withoutTasksExtension(capabilities: Record<string, unknown>): Record<string, unknown> {
  const ext = capabilities['extensions'] as Record<string, unknown> | undefined;
  if (!ext || typeof ext !== 'object' || !(TASKS_EXTENSION in ext)) return capabilities;
  const { [TASKS_EXTENSION]: _tasks, ...rest } = ext;
  return { ...capabilities, extensions: rest };
}
