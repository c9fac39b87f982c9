import { describe, expect, it } from 'vitest';
import { FinishedTasks, type FinishedTask } from '../../../src/fronts/tasks/finished-tasks.js';

const task = (id: string, principal: string, unwritten = false): FinishedTask => ({ id, principal, unwritten });

describe('FinishedTasks', () => {
  it('forgets the oldest written task past 4 × a bound, per principal and in all, and an unwritten one last', () => {
    const kept = new FinishedTasks<FinishedTask>(1, 2); // 4 per principal, 8 in all
    const a = ['a0', 'a1', 'a2', 'a3'].map((id, i) => task(id, 'alice', i === 0));
    for (const t of a) expect(kept.add(t)).toEqual([]);
    const over = kept.add(task('a4', 'alice'));
    expect(over.map((t) => t.id)).toEqual(['a1']); // a0 is unwritten: kept
    for (const t of over) kept.delete(t);
    const others = ['b0', 'b1', 'b2', 'b3', 'b4'].map((id) => task(id, `p${id}`));
    const forgotten = others.flatMap((t) => kept.add(t));
    expect(forgotten.map((t) => t.id)).toEqual(['a2']); // 9 in all: the oldest written
    expect(kept.has('a0')).toBe(true);
  });

  it('forgets the oldest when every task is unwritten: memory stays bounded', () => {
    const kept = new FinishedTasks<FinishedTask>(1, 100);
    for (const id of ['x0', 'x1', 'x2', 'x3']) kept.add(task(id, 'alice', true));
    expect(kept.add(task('x4', 'alice', true)).map((t) => t.id)).toEqual(['x0']);
  });
});
