import { describe, expect, it } from 'vitest';
import { checkOrigin, originPolicy } from '../../src/http/guards.js';

describe('Host and Origin checks', () => {
  it('accepts the local names and the configured ones, refuses others, the same on every ask', () => {
    const policy = originPolicy('127.0.0.1', ['gw.internal'], ['https://app.example.com']);
    for (let round = 0; round < 3; round++) {
      expect(checkOrigin(policy, '127.0.0.1:8080', undefined)).toBeUndefined();
      expect(checkOrigin(policy, 'localhost:8080', 'http://localhost:3000')).toBeUndefined();
      expect(checkOrigin(policy, 'gw.internal', 'https://app.example.com')).toBeUndefined();
      expect(checkOrigin(policy, 'evil.example', undefined)).toBe('Forbidden: Host not allowed');
      expect(checkOrigin(policy, undefined, undefined)).toBe('Forbidden: Host not allowed');
      expect(checkOrigin(policy, '127.0.0.1:8080', 'http://evil.example')).toBe('Forbidden: Origin not allowed');
      expect(checkOrigin(policy, '127.0.0.1:8080', 'null')).toBe('Forbidden: Origin not allowed');
    }
  });

  it('checks every value the same way however many different ones came before', () => {
    const policy = originPolicy('127.0.0.1', [], []);
    for (let port = 1000; port < 1100; port++) expect(checkOrigin(policy, `127.0.0.1:${port}`, `http://localhost:${port}`)).toBeUndefined();
    for (let i = 0; i < 50; i++) expect(checkOrigin(policy, `evil${i}.example`, undefined)).toBe('Forbidden: Host not allowed');
    expect(checkOrigin(policy, '127.0.0.1:1000', 'http://evil.example')).toBe('Forbidden: Origin not allowed');
  });

  it('lets any Host through on a wildcard bind with no list, Origin still checked', () => {
    const policy = originPolicy('0.0.0.0', [], []);
    expect(checkOrigin(policy, 'anything.example', undefined)).toBeUndefined();
    expect(checkOrigin(policy, 'anything.example', 'http://evil.example')).toBe('Forbidden: Origin not allowed');
  });
});
