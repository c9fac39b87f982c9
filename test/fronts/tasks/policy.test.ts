import { describe, expect, it } from 'vitest';
import { taskPolicyFor, toolForCaller, type TaskPolicySource } from '../../../src/fronts/tasks/policy.js';

const source: TaskPolicySource = {
  promoteAfterMs: 5_000,
  servers: new Map([['legacy', { tools: { export_report: { support: 'required' as const } } }]]),
};
const legacy = { name: 'legacy', servesTaskToolsAsCalls: true };
const modern = { name: 'modern' };
const tool = (name: string, taskSupport?: string, more: Record<string, unknown> = {}) => ({
  name,
  inputSchema: { type: 'object' },
  ...(taskSupport !== undefined || Object.keys(more).length > 0 ? { execution: { ...more, ...(taskSupport ? { taskSupport } : {}) } } : {}),
});

describe('which tools a caller is listed', () => {
  it('leaves a tool the gateway runs only as a task out of the lists of a caller that takes no task, and lists it to one that does', () => {
    expect(toolForCaller(source, legacy, tool('export_report', 'forbidden'), false)).toBeUndefined();
    expect(toolForCaller(source, legacy, tool('export_report', 'forbidden'), true)).toEqual(tool('export_report'));
  });

  it("lists a legacy backend's task-required tool to every caller (the gateway runs it as the backend's task and waits), without taskSupport", () => {
    expect(taskPolicyFor(source, legacy, 'research', tool('research', 'required'))).toEqual({ support: 'optional', promoteAfterMs: 0 });
    expect(toolForCaller(source, legacy, tool('research', 'required'), false)).toEqual(tool('research'));
  });

  it('lists a task-required tool of a backend that cannot run it as a plain call only to callers that take a task', () => {
    expect(taskPolicyFor(source, modern, 'job', tool('job', 'required'))).toEqual({ support: 'required', promoteAfterMs: 0 });
    expect(toolForCaller(source, modern, tool('job', 'required'), false)).toBeUndefined();
    expect(toolForCaller(source, modern, tool('job', 'required'), true)).toEqual(tool('job'));
  });

  it('passes every other tool through as it is, other execution fields included', () => {
    const plain = tool('echo');
    expect(toolForCaller(source, legacy, plain, false)).toBe(plain);
    expect(toolForCaller(source, legacy, tool('echo', 'forbidden', { future: { x: 1 } }), false)).toEqual(tool('echo', undefined, { future: { x: 1 } }));
  });
});
