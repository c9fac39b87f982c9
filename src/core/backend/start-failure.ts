/** Why a backend session did not start: the innermost cause, and what its process said on stderr. */

/** A session that failed to start, with what its process said on stderr. */
export class StartFailure extends Error {
  constructor(
    cause: unknown,
    readonly stderr: readonly string[],
  ) {
    super(causeText(cause), { cause });
    this.name = 'StartFailure';
  }
}

/** The innermost message of an error chain (`spawn foo ENOENT`, `connect ECONNREFUSED …`). */
export function causeText(e: unknown): string {
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur instanceof Error && cur.cause instanceof Error; i++) cur = cur.cause;
  return cur instanceof Error ? cur.message : String(cur);
}
