/**
 * What the config's parse says of a server entry beyond zod's own words: a key of the other kind of
 * server, the field a union's branch found wrong, and server names whose tools' exposed names would meet.
 * config.ts runs them; each says what is wrong in the entry's own terms.
 */

/**
 * The keys of an entry that belong to the other kind of server (`transport` or `headers` beside a
 * `command`, `args` or `env` beside a `url`), named as such and taken out, where zod would say
 * "Unrecognized key"; and an entry with both a `command` and a `url`.
 */
export function takeOtherKindKeys(name: string, entry: Record<string, unknown>, shapes: { readonly stdio: object; readonly http: object }): string[] {
  const stdio = entry['command'] !== undefined;
  if (stdio && entry['url'] !== undefined) return [`mcpServers.${name}: give either "command" (stdio) or "url" (HTTP), not both`];
  if (!stdio && entry['url'] === undefined) return []; // neither: said by the caller
  const own = stdio ? shapes.stdio : shapes.http;
  const other = stdio ? shapes.http : shapes.stdio;
  return Object.keys(entry)
    .filter((k) => !Object.hasOwn(own, k) && Object.hasOwn(other, k))
    .map((k) => {
      delete entry[k]; // said here: zod's "Unrecognized key" would say it again, less clearly
      return stdio
        ? `mcpServers.${name}.${k}: "${k}" is for a server with a "url" (HTTP); this one has a "command" (stdio)`
        : `mcpServers.${name}.${k}: "${k}" is for a server with a "command" (stdio); this one has a "url" (HTTP)`;
    });
}

/** An issue as zod reports it: where, what, and for a union that no branch took, each branch's own issues. */
interface Issue {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly code?: string;
  readonly errors?: readonly (readonly Issue[])[];
}

/**
 * A server entry that neither branch took (stdio or HTTP) is reported by the branch its keys chose:
 * an entry with a `command` by the stdio branch's issues (`args` must be an array, …), one with a
 * `url` by the HTTP branch's, where zod says only "Invalid input". An entry with neither keeps that
 * (normalizeFile has said what it lacks), and every other issue is as it is.
 */
export function branchIssues(issue: Issue): Issue[] {
  const [first, name] = issue.path;
  if (issue.code !== 'invalid_union' || first !== 'mcpServers' || issue.path.length !== 2 || issue.errors?.length !== 2) return [issue];
  const lacks = (branch: readonly Issue[], key: string): boolean =>
    branch.some((i) => i.path.length === 1 && i.path[0] === key && /received undefined/.test(i.message));
  const [stdio, http] = issue.errors as [readonly Issue[], readonly Issue[]];
  const chosen = !lacks(stdio, 'command') ? stdio : !lacks(http, 'url') ? http : undefined;
  return chosen && chosen.length > 0 ? chosen.map((i) => ({ ...i, path: ['mcpServers', name!, ...i.path] })) : [issue];
}

/**
 * With several servers, a tool or prompt is exposed as `<server><separator><name>`: two servers' names
 * meet when one server's name and the separator begin another's (`a` + `b__c` and `a__b` + `c` are both
 * `a__b__c`, and every call of it would go to `a`). The longer name is refused; a name that holds the
 * separator without such a neighbour (`github__enterprise` beside `slack`) is fine.
 */
export function ambiguousNames(servers: readonly { readonly name: string }[], separator: string): string[] {
  if (servers.length < 2) return [];
  return servers.flatMap((longer) => {
    const shorter = servers.find((s) => s !== longer && longer.name.startsWith(`${s.name}${separator}`));
    return shorter
      ? [
          `mcpServers.${longer.name}: its tools' exposed names (${longer.name}${separator}<tool>) could be server ${shorter.name}'s (${shorter.name}${separator}<tool>), as the name begins with "${shorter.name}${separator}" (gateway.toolNameSeparator); rename one of them or choose another separator`,
        ]
      : [];
  });
}
