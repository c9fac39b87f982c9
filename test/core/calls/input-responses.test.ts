import { ElicitResultSchema } from '@modelcontextprotocol/core';
import { describe, expect, it } from 'vitest';
import { parseInputResponses, responseProblem } from '../../../src/core/calls/input-responses.js';

const form = {
  message: 'Book',
  requestedSchema: {
    type: 'object',
    properties: {
      date: { type: 'string' },
      people: { type: 'integer', minimum: 1, maximum: 12 },
      vegan: { type: 'boolean' },
      seat: { type: 'string', enum: ['inside', 'outside'] },
      size: {
        type: 'string',
        oneOf: [
          { const: 's', title: 'Small' },
          { const: 'l', title: 'Large' },
        ],
      },
      extras: { type: 'array', items: { enum: ['wine', 'cake'] } },
    },
    required: ['date', 'people'],
  },
};

describe('responseProblem', () => {
  it('takes an elicitation result exactly when the SDK schema does', () => {
    const answers: unknown[] = [
      { action: 'accept', content: { name: 'Ada', n: 1, ok: true, tags: ['a', 'b'], none: [] } },
      { action: 'decline' },
      { action: 'cancel', content: null },
      { action: 'accept', content: {}, _meta: { 'io.modelcontextprotocol/serverInfo': 'odd' } },
      { action: 'accept', extra: 1 },
      { action: 'accept', content: { nested: { x: 1 } } },
      { action: 'accept', content: { mixed: ['a', 1] } },
      { action: 'accept', content: { n: null } },
      { action: 'accept', content: ['a'] },
      { action: 'accept', content: 'text' },
      { action: 'accept', _meta: null },
      { action: 'accept', _meta: [] },
      { action: 'ACCEPT' },
      { action: 1 },
      {},
      null,
      'accept',
      [{ action: 'accept' }],
      JSON.parse('{"action":"accept","content":{"__proto__":"x"}}'),
      JSON.parse('{"action":"accept","content":{"__proto__":{"x":1}}}'),
      JSON.parse('{"__proto__":{"action":"accept"}}'),
    ];
    for (const answer of answers) {
      // URL mode: nothing to check the content against, the schema alone decides.
      const taken = responseProblem('elicitation/create', { mode: 'url' }, answer) === undefined;
      expect(taken, JSON.stringify(answer)).toBe(ElicitResultSchema.safeParse(answer).success);
    }
  });

  it('accepts an answer that fits the requested schema, and any decline or cancel', () => {
    expect(
      responseProblem('elicitation/create', form, { action: 'accept', content: { date: 'Fri', people: 4, seat: 'inside', size: 'l', extras: ['cake'] } }),
    ).toBeUndefined();
    expect(responseProblem('elicitation/create', form, { action: 'decline' })).toBeUndefined();
    expect(responseProblem('elicitation/create', form, { action: 'cancel' })).toBeUndefined();
  });

  it.each([
    [{ people: 4 }, 'content.date is required'],
    [{ date: 5, people: 4 }, 'content.date must be a string'],
    [{ date: 'Fri', people: 2.5 }, 'content.people must be an integer'],
    [{ date: 'Fri', people: 40 }, 'content.people must be at most 12'],
    [{ date: 'Fri', people: 2, vegan: 'yes' }, 'content.vegan must be true or false'],
    [{ date: 'Fri', people: 2, seat: 'roof' }, 'content.seat must be one of "inside", "outside"'],
    [{ date: 'Fri', people: 2, size: 'm' }, 'content.size must be one of "s", "l"'],
    [{ date: 'Fri', people: 2, extras: ['beer'] }, 'content.extras may only hold "wine", "cake"'],
  ])('refuses accepted content %j: %s', (content, problem) => {
    expect(responseProblem('elicitation/create', form, { action: 'accept', content })).toBe(problem);
  });

  it('checks the result shape of every kind, and URL-mode elicitation has no content to check', () => {
    expect(responseProblem('elicitation/create', { mode: 'url', url: 'https://x', message: 'm', elicitationId: 'e' }, { action: 'accept' })).toBeUndefined();
    expect(responseProblem('elicitation/create', form, { action: 'maybe' })).toMatch(/not an elicitation result/);
    expect(responseProblem('sampling/createMessage', {}, { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' })).toBeUndefined();
    expect(responseProblem('sampling/createMessage', {}, { content: 'x' })).toMatch(/not a sampling result/);
    expect(responseProblem('roots/list', {}, { roots: [] })).toBeUndefined();
    expect(responseProblem('tools/call', {}, {})).toBe('nothing of that kind was asked');
  });
});

describe('parseInputResponses', () => {
  it('takes an object of objects, or nothing', () => {
    expect(parseInputResponses(undefined)).toEqual({ ok: true, value: undefined });
    expect(parseInputResponses([]).ok).toBe(false);
    expect(parseInputResponses({ a: 1 }).ok).toBe(false);
    expect(parseInputResponses({ a: {} }).ok).toBe(true);
  });
});
