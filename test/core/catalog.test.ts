/**
 * The catalog's names (a single module: backends are in-memory fakes of the port). `resolveKnown`
 * answers what `resolve` answers, with no I/O, when the first candidate's last known list names the
 * tool; otherwise it leaves the question to `resolve`.
 */
import { describe, expect, it } from 'vitest';
import type { BackendPort, CatalogKind } from '../../src/core/backend/port.js';
import { Catalog, templateMatching } from '../../src/core/catalog.js';
import { silentLogger } from '../../src/log.js';

type Items = Record<string, unknown>[];

/** A backend whose last known tools are `known` and whose next list (I/O, counted) is `listed`. */
function backend(name: string, known: Items | undefined, listed: Items = known ?? [], unprefixed = false) {
  const port = {
    name,
    unprefixed,
    lists: 0,
    cachedList: (kind: CatalogKind) => (kind === 'tools' ? known : undefined),
    list: async (kind: CatalogKind) => {
      port.lists++;
      return kind === 'tools' ? listed : [];
    },
  };
  return port as typeof port & BackendPort;
}

const tool = (name: string): Record<string, unknown> => ({ name, inputSchema: { type: 'object' } });

describe('Catalog.resolveKnown', () => {
  it("resolves a tool its one backend's last known list names, as resolve does, without listing", async () => {
    const only = backend('files', [tool('read'), tool('write')]);
    const catalog = new Catalog([only], '__', silentLogger);
    expect(catalog.resolveKnown('tools', 'write')).toEqual({ backend: only, name: 'write' });
    expect(await catalog.resolve('tools', 'write')).toEqual({ backend: only, name: 'write' });
    expect(only.lists).toBe(0);
  });

  it('takes the prefix off a named backend among several', () => {
    const a = backend('a', [tool('echo')]);
    const b = backend('b', [tool('echo')]);
    const catalog = new Catalog([a, b], '__', silentLogger);
    expect(catalog.resolveKnown('tools', 'b__echo')).toEqual({ backend: b, name: 'echo' });
    expect(catalog.resolveKnown('tools', 'echo')).toBeUndefined();
    expect(catalog.resolveKnown('tools', 'b__')).toBeUndefined();
  });

  it('leaves to resolve a name the first candidate does not know yet, even when a later one knows it', async () => {
    // The gateway's own (unprefixed) backend is asked first: its fresh list may name the tool.
    const own = backend('gateway', [], [tool('echo')], true);
    const named = backend('only', [tool('echo')]);
    const catalog = new Catalog([own, named], '__', silentLogger);
    expect(catalog.resolveKnown('tools', 'echo')).toBeUndefined();
    expect(await catalog.resolve('tools', 'echo')).toEqual({ backend: own, name: 'echo' });
  });

  it('leaves to resolve a backend that has never listed', async () => {
    const only = backend('files', undefined, [tool('read')]);
    const catalog = new Catalog([only], '__', silentLogger);
    expect(catalog.resolveKnown('tools', 'read')).toBeUndefined();
    expect(await catalog.resolve('tools', 'read')).toEqual({ backend: only, name: 'read' });
    expect(only.lists).toBe(1);
  });

  it('resolves no prompt from a tools list', () => {
    const only = backend('files', [tool('read')]);
    expect(new Catalog([only], '__', silentLogger).resolveKnown('prompts', 'read')).toBeUndefined();
  });
});

describe('templateMatching', () => {
  it('names the template a URI matches, and none for a URI no template matches or an unreadable template', () => {
    const templates = [{ uriTemplate: 'file:///{+path}' }, { uriTemplate: 'notes://{id}' }, { uriTemplate: 42 }];
    expect(templateMatching('notes://7', templates)).toBe('notes://{id}');
    expect(templateMatching('NOTES://7', templates)).toBe('notes://{id}'); // in any form the policy reads it
    expect(templateMatching('file:///etc/hosts', templates)).toBe('file:///{+path}');
    expect(templateMatching('other://x', templates)).toBeUndefined();
  });
});
