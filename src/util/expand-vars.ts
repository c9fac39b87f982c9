/**
 * Variables in host config files, expanded as the hosts do before a server starts: `${VAR}` and
 * `${env:VAR}` (Claude Code, VS Code) from the environment, `${VAR:-default}` (Claude Code) with a
 * default when unset or empty, `${workspaceFolder}` (the config file's folder) and `${userHome}`.
 * `${input:…}` (VS Code prompts) cannot be answered by a server-side gateway and is a problem; so is a
 * variable that is not set and has no default. Anything else is left as written.
 */

export interface VariableContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The folder of the config file (`${workspaceFolder}`); undefined without a file. */
  readonly workspaceFolder?: string | undefined;
  readonly userHome?: string | undefined;
}

/** `${…}`, whose default may itself hold one level of `${…}`. */
const VARIABLE = /\$\{((?:[^{}]|\$\{[^{}]*\})*)\}/g;

/** `text` with its variables expanded; the problems (one line each, without the path) are pushed to `problems`. */
export function expandVariables(text: string, ctx: VariableContext, problems: string[]): string {
  return text.replace(VARIABLE, (whole, body: string) => {
    if (body === 'workspaceFolder' || body === 'userHome') {
      const value = body === 'workspaceFolder' ? ctx.workspaceFolder : ctx.userHome;
      if (value === undefined) problems.push(`\${${body}} cannot be told here`);
      return value ?? whole;
    }
    if (body.startsWith('input:')) {
      problems.push(`\${${body}} asks the host to prompt for a value, which a gateway cannot do: give the value in "env" or "headers" (or \${VAR})`);
      return whole;
    }
    const m = /^(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(body);
    if (!m) return whole;
    const [, name, fallback] = m as unknown as [string, string, string | undefined];
    const value = ctx.env[name];
    if (value !== undefined && (value !== '' || fallback === undefined)) return value;
    if (fallback !== undefined) return expandVariables(fallback, ctx, problems);
    problems.push(`environment variable ${name} is not set (set it, or give a default: \${${name}:-…})`);
    return whole;
  });
}
