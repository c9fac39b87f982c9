/**
 * A completed task's inlined `result` (ext-tasks tasks.md, "completed"): a full 2026-07-28 result of the
 * original request, whatever the backend gave and whichever instance wrote the snapshot.
 */
import { describe, expect, it } from 'vitest';
import { RELATED_TASK_META, detailedTask, inlinedResult, type TaskSnapshot } from '../../../src/protocol/rev-2026-07-28/tasks.js';

const base: TaskSnapshot = { taskId: 'a~1', status: 'completed', createdAt: 0, lastUpdatedAt: 1, ttlMs: 60_000 };

describe('a completed task’s result', () => {
  it('gets resultType "complete" when the backend gave none (a legacy backend’s bare CallToolResult)', () => {
    const t = detailedTask({ ...base, result: { content: [{ type: 'text', text: 'done' }] } });
    expect(t['result']).toEqual({ resultType: 'complete', content: [{ type: 'text', text: 'done' }] });
  });

  it('keeps a resultType the backend already gave, and tool errors as they are', () => {
    expect(inlinedResult({ resultType: 'complete', content: [], isError: true })).toEqual({ resultType: 'complete', content: [], isError: true });
    expect(inlinedResult({ resultType: 'something_new', content: [] })['resultType']).toBe('something_new');
  });

  it('drops the 2025-11-25 related-task _meta key and keeps the rest of _meta', () => {
    const r = inlinedResult({ content: [], _meta: { [RELATED_TASK_META]: { taskId: 'x' }, other: 1 } });
    expect(r).toEqual({ resultType: 'complete', content: [], _meta: { other: 1 } });
  });

  it('is not inlined for a task that has not completed', () => {
    expect(detailedTask({ ...base, status: 'failed', result: { content: [] }, error: { code: -32603, message: 'x' } })['result']).toBeUndefined();
  });
});
