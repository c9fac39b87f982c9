/** A backend list's item by its `name` (tools, prompts): a loop, with no closure made on a call's way. */
export function itemNamed(items: readonly Record<string, unknown>[], name: unknown): Record<string, unknown> | undefined {
  for (let i = 0; i < items.length; i++) if (items[i]!['name'] === name) return items[i];
  return undefined;
}
