/**
 * The gateway's server capabilities: the union of what its backends declare (tools, prompts,
 * resources, completions, logging), with `listChanged` where a backend announces list changes (they
 * reach clients through `subscriptions/listen`), and the tasks extension when there are tools. Resource
 * `subscribe` is not offered.
 */
import type { Catalog } from '../../core/catalog.js';
import { TASKS_EXTENSION } from '../../protocol/rev-2026-07-28/tasks.js';

export async function gatewayCapabilities(catalog: Catalog): Promise<Record<string, Record<string, unknown>>> {
  const caps: Record<string, Record<string, unknown>> = {};
  const all = await Promise.all(catalog.backends.map((b) => b.capabilities()));
  for (const c of all) {
    if (!c) continue;
    for (const kind of ['tools', 'prompts', 'resources'] as const) {
      const k = c[kind] as { listChanged?: unknown } | undefined;
      if (!k) continue;
      caps[kind] ??= {};
      if (k.listChanged === true) caps[kind]['listChanged'] = true;
    }
    if (c['completions']) caps['completions'] = {};
    if (c['logging']) caps['logging'] = {};
  }
  // Any tool call may become a task for a client that declares the extension (the gateway runs them).
  if (caps['tools']) caps['extensions'] = { [TASKS_EXTENSION]: {} };
  return caps;
}
