import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isCanonicalBase64url } from '../../src/util/canonical-json.js';

/** The definition the check stands for: the text is what encoding its decoded bytes gives back. */
const reencodes = (text: string): boolean => /^[A-Za-z0-9_-]*$/.test(text) && Buffer.from(text, 'base64url').toString('base64url') === text;

describe('isCanonicalBase64url', () => {
  it('answers as decoding and encoding again would, for every last character of every length up to 9', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    let canonical = 0;
    for (let length = 0; length <= 9; length++) {
      const stem = randomBytes(8)
        .toString('base64url')
        .slice(0, Math.max(0, length - 1));
      for (const last of length === 0 ? [''] : alphabet) {
        const text = stem + last;
        expect(isCanonicalBase64url(text), text).toBe(reencodes(text));
        if (reencodes(text)) canonical++;
      }
    }
    // 1 (empty) + per length mod 4: 0 → 64 each, 1 → none, 2 → 4, 3 → 16 (lengths 2,3,4,6,7,8 and 5,9 none).
    expect(canonical).toBe(1 + 64 * 2 + 4 * 2 + 16 * 2);
  });

  it('refuses padding, the +/ alphabet and any other character; takes what base64url writes', () => {
    for (const text of ['QQ==', 'QQ=', 'a+b/', 'ab c', 'ab.c', 'é']) expect(isCanonicalBase64url(text), text).toBe(false);
    for (let n = 0; n < 40; n++) {
      const text = randomBytes(n).toString('base64url');
      expect(isCanonicalBase64url(text), text).toBe(true);
    }
  });
});
