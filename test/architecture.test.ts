/** The layering, made executable: http → protocol → core → util; Hono only in src/http. */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../src/version.js';

const SRC = join(import.meta.dirname, '..', 'src');
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}
const imports = (file: string): string[] => [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
const layer = (rel: string): string => rel.split('/')[0]!.replace(/\.ts$/, '');
const RANK: Record<string, number> = { util: 0, core: 1, protocol: 2, http: 3 };

describe('architecture', () => {
  it('imports hono only in src/http (and @hono/node-server only in the entry point)', () => {
    for (const f of files(SRC)) {
      const rel = relative(SRC, f);
      for (const spec of imports(f)) {
        if (spec === 'hono' || spec.startsWith('hono/')) expect(rel.startsWith('http/'), rel).toBe(true);
        if (spec.startsWith('@hono/')) expect(rel, rel).toBe('main.ts');
      }
    }
  });

  it('never imports upward (http → protocol → core → util)', () => {
    for (const f of files(SRC)) {
      const rel = relative(SRC, f);
      const from = RANK[layer(rel)];
      if (from === undefined) continue;
      for (const spec of imports(f).filter((s) => s.startsWith('.'))) {
        const target = relative(SRC, join(f, '..', spec));
        const to = RANK[layer(target)];
        if (to !== undefined) expect(to, `${rel} imports ${target}`).toBeLessThanOrEqual(from);
      }
    }
  });

  it('has no default exports and reads process.env only in the entry point', () => {
    for (const f of files(SRC)) {
      const text = readFileSync(f, 'utf8');
      expect(text, f).not.toMatch(/export default/);
      if (!f.endsWith('main.ts') && !f.includes('/demo/')) expect(text, f).not.toMatch(/process\.env/);
    }
  });

  it('keeps the version in step with package.json', () => {
    expect(JSON.parse(readFileSync(join(SRC, '..', 'package.json'), 'utf8')).version).toBe(VERSION);
  });
});
