import { describe, expect, it } from 'vitest';
import { resourceUriError, resourceUriProblem } from '../../src/protocol/resource-uri.js';

describe('resource URIs', () => {
  it('accepts absolute URIs of any scheme, with spaces or non-ASCII characters', () => {
    for (const uri of [
      'test://static',
      'file:///home/a b/notes.txt',
      'urn:isbn:0451450523',
      'https://example.com/é?q=1#x',
      'x-custom+v1.2:thing',
      'mailto:a@b',
    ])
      expect(resourceUriProblem(uri), uri).toBeUndefined();
  });

  it('refuses a relative reference, an empty string, a non-string and control characters, with -32602 echoing the start of the uri', () => {
    for (const uri of ['x', 'notes/today.txt', '/abs/path', '://x', '1abc:x', '', 42, null]) expect(resourceUriProblem(uri), String(uri)).toBeDefined();
    for (const uri of ['\u0000', 'test://a\u0000', 'test://a\tb', 'test://a\u007f', 'test://a\u0085'])
      expect(resourceUriProblem(uri)).toMatch(/control characters/);
    const e = resourceUriError(`no-scheme-${'a'.repeat(500)}`);
    expect(e?.code).toBe(-32602);
    expect((e?.data as { uri: string }).uri).toHaveLength(200);
    expect(resourceUriError('test://ok')).toBeUndefined();
  });
});
