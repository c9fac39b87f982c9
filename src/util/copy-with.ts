/**
 * `{ ...source, ...extra }`, made with Object.assign: V8 gives each copy a spread makes, at a site that
 * sees objects of many shapes, a hidden class of its own (about 0.25 KiB that a parked call holds, issue
 * 30). A source with an own `__proto__` key (JSON.parse makes one) is copied with a spread, which keeps
 * it an own key, where Object.assign would make it the copy's prototype.
 */
export function copyWith<T extends object>(source: object | undefined, extra: T): Record<string, unknown> & T {
  if (source !== undefined && Object.hasOwn(source, '__proto__')) return { ...source, ...extra } as Record<string, unknown> & T;
  return Object.assign({}, source, extra) as Record<string, unknown> & T;
}
