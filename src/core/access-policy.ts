/**
 * Who may use what (`gateway.policy`): rules that allow or deny servers, tools, prompts and resources
 * to principals, to groups of principals, or to callers whose token grants a scope. Names are glob
 * patterns (`*` any run of characters, `?` one) over a server's name and over an item's name as its
 * server knows it (a tool `create_issue` of server `github`, which a client lists as
 * `github__create_issue`, or calls through execute_tool as server `github`, tool `create_issue`);
 * resources by URI (templates by their URI template).
 *
 * For one caller and one item: the rules that apply to the caller (a rule naming no one applies to
 * everyone) are read; any deny that matches refuses it; otherwise an allow that matches grants it;
 * when no applying rule has an allow section, `default` decides. What is refused is neither listed
 * nor callable, on every front.
 */

export type PolicyKind = 'tools' | 'prompts' | 'resources' | 'resourceTemplates';

export interface ItemPatterns {
  readonly servers?: readonly string[] | undefined;
  readonly tools?: readonly string[] | undefined;
  readonly prompts?: readonly string[] | undefined;
  readonly resources?: readonly string[] | undefined;
}

export interface PolicyRule {
  /** Whom it applies to: principals, groups (of `groups`), token scopes; none of them: everyone. */
  readonly principals?: readonly string[] | undefined;
  readonly groups?: readonly string[] | undefined;
  readonly scopes?: readonly string[] | undefined;
  readonly allow?: ItemPatterns | undefined;
  readonly deny?: ItemPatterns | undefined;
}

export interface PolicySettings {
  /** Group name → its principals. */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  readonly rules: readonly PolicyRule[];
  /** For a caller no allow applies to. */
  readonly default: 'allow' | 'deny';
}

/** Who is asking: the principal and, with OAuth, the scopes its token grants. */
export interface Caller {
  readonly principal: string;
  readonly tokenScopes?: ReadonlySet<string> | undefined;
}

/** One caller's access. */
export interface CallerAccess {
  allows(kind: PolicyKind, server: string, name: string): boolean;
  /**
   * A resource read (through a template: `template`, the one its URI matched): refused when a deny names
   * the URI in any of its forms (`uriForms`) or the template, granted when an allow names the URI in
   * all of its forms or the template (not for a URI that may reach outside its path: dot segments,
   * escaped slashes), else as `default` says.
   */
  allowsResource(server: string, uri: string, template?: string): boolean;
  /** True when nothing of `server` can be allowed (its whole list is refused). */
  deniesServer(server: string): boolean;
}

/**
 * Whether `access` lets the caller see an item its server lists: the same check as using it, so a list
 * never shows what a read refuses nor hides what it serves. Tools and prompts by name, resources by
 * URI (as `allowsResource` reads one), templates by URI template.
 */
export function shows(access: CallerAccess, kind: PolicyKind, server: string, item: Record<string, unknown>): boolean {
  if (kind === 'resources') return typeof item['uri'] === 'string' && access.allowsResource(server, item['uri']);
  const name = kind === 'resourceTemplates' ? item['uriTemplate'] : item['name'];
  return typeof name === 'string' && access.allows(kind, server, name);
}

/** Everything allowed: no policy configured. */
export const OPEN_ACCESS: CallerAccess = { allows: () => true, allowsResource: () => true, deniesServer: () => false };

export interface AccessPolicy {
  for(caller: Caller): CallerAccess;
}

/** A glob as a regular expression over the whole name. */
function globOf(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

interface CompiledPatterns {
  readonly servers?: RegExp[] | undefined;
  readonly items: Readonly<Record<PolicyKind, RegExp[] | undefined>>;
}

function compile(p: ItemPatterns | undefined): CompiledPatterns | undefined {
  if (!p) return undefined;
  const all = (list: readonly string[] | undefined) => list?.map(globOf);
  // A URI pattern also as a URL parser writes it (`https://example.com` names `https://example.com/`).
  const resources = all(p.resources && [...new Set(p.resources.flatMap((r) => [r, ...(URL.canParse(r) ? [new URL(r).href] : [])]))]);
  return { servers: all(p.servers), items: { tools: all(p.tools), prompts: all(p.prompts), resources, resourceTemplates: resources } };
}

const any = (res: RegExp[] | undefined, s: string): boolean => res !== undefined && res.some((r) => r.test(s));

/** True when `p` names `server` (or says nothing of servers) and names the item (or says nothing of its kind). */
function grants(p: CompiledPatterns, kind: PolicyKind, server: string, name: string): boolean {
  const items = p.items[kind];
  const anyItems = Object.values(p.items).some((x) => x !== undefined);
  if (!p.servers && !anyItems) return false;
  if (p.servers && !any(p.servers, server)) return false;
  if (items) return any(items, name);
  return p.servers !== undefined;
}

/** True when `p` refuses the item: its server, or the item by name. */
function refuses(p: CompiledPatterns, kind: PolicyKind, server: string, name: string): boolean {
  return any(p.servers, server) || any(p.items[kind], name);
}

/**
 * The forms a URI a client asks to read may take at the server that reads it: as sent, as a URL parser
 * makes it (scheme and a special scheme's host in lower case, dot segments resolved: `DEMO://readme`,
 * `file:///tmp/../etc/passwd`), and percent-decoded (`file:///tmp%2F..%2Fetc`). A deny that names any of
 * them refuses the read; an allow by URI must name all of them.
 */
export function uriForms(uri: string): string[] {
  const forms = new Set([uri]);
  const add = (u: string): void => {
    forms.add(u);
    if (URL.canParse(u)) forms.add(new URL(u).href);
  };
  add(uri);
  // Each ASCII escape on its own (`%2F`, `%2E`): one malformed escape elsewhere must not hide them.
  add(uri.replace(/%([0-7][0-9a-fA-F])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))));
  try {
    add(decodeURIComponent(uri));
  } catch {
    // not wholly percent-decodable: its ASCII escapes were decoded above
  }
  return [...forms];
}

/**
 * Whether a URI may name something outside the path it seems to (a dot segment, an escaped dot, slash
 * or backslash, a backslash): read through a template, such a URI is granted by the URI patterns only,
 * since the template matched it as sent (`file:///tmp/{name}` matches `file:///tmp/..%2Fetc%2Fpasswd`).
 */
function mayTraverse(uri: string): boolean {
  return /%2e|%2f|%5c|\\/i.test(uri) || /(^|\/)\.\.?(\/|$|[?#])/.test(uri);
}

export function createAccessPolicy(settings: PolicySettings): AccessPolicy {
  const rules = settings.rules.map((r) => ({ rule: r, allow: compile(r.allow), deny: compile(r.deny) }));
  const groupsOf = (principal: string): Set<string> =>
    new Set(Object.entries(settings.groups).flatMap(([group, members]) => (members.includes(principal) ? [group] : [])));
  return {
    for(caller) {
      const groups = groupsOf(caller.principal);
      const applying = rules.filter(({ rule }) => {
        const named = rule.principals !== undefined || rule.groups !== undefined || rule.scopes !== undefined;
        if (!named) return true;
        return (
          (rule.principals?.includes(caller.principal) ?? false) ||
          (rule.groups?.some((g) => groups.has(g)) ?? false) ||
          (rule.scopes?.some((s) => caller.tokenScopes?.has(s) ?? false) ?? false)
        );
      });
      const allows = (kind: PolicyKind, server: string, name: string): boolean => {
        if (applying.some((r) => r.deny && refuses(r.deny, kind, server, name))) return false;
        const allowing = applying.filter((r) => r.allow);
        if (allowing.length === 0) return settings.default === 'allow';
        return allowing.some((r) => grants(r.allow!, kind, server, name));
      };
      const allowsResource = (server: string, uri: string, template?: string): boolean => {
        const forms = uriForms(uri);
        if (
          applying.some(
            (r) =>
              r.deny &&
              (forms.some((f) => refuses(r.deny!, 'resources', server, f)) ||
                (template !== undefined && refuses(r.deny, 'resourceTemplates', server, template))),
          )
        )
          return false;
        const allowing = applying.filter((r) => r.allow);
        if (allowing.length === 0) return settings.default === 'allow';
        const byTemplate = template !== undefined && !mayTraverse(uri) ? template : undefined;
        return allowing.some(
          (r) =>
            forms.every((f) => grants(r.allow!, 'resources', server, f)) ||
            (byTemplate !== undefined && grants(r.allow!, 'resourceTemplates', server, byTemplate)),
        );
      };
      const deniesServer = (server: string): boolean => {
        if (applying.some((r) => any(r.deny?.servers, server))) return true;
        const allowing = applying.filter((r) => r.allow);
        if (allowing.length === 0) return settings.default === 'deny';
        return !allowing.some((r) => !r.allow!.servers || any(r.allow!.servers, server));
      };
      return { allows, allowsResource, deniesServer };
    },
  };
}
