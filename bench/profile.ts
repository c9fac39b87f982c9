/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time per function, the top entries first, as
 * rows and as a markdown table. Functions are keyed by name and location; paths are shown relative to
 * the project (dependencies as `package/file`), so the table reads the same on every machine.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly hitCount?: number;
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
}

export interface ProfileRow {
  readonly fn: string;
  readonly where: string;
  readonly selfMs: number;
  readonly selfPct: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  /** Time V8 spent outside JavaScript: idle, GC and native code, as the profile labels them. */
  readonly idleMs: number;
  readonly gcMs: number;
  readonly top: readonly ProfileRow[];
  /** Self time grouped by where the code lives: this gateway, each dependency, node internals. */
  readonly byOwner: readonly { readonly owner: string; readonly selfMs: number; readonly selfPct: number }[];
}

function shortPath(url: string, root: string): string {
  const path = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) return path.slice(nm + '/node_modules/'.length);
  if (path.startsWith(root)) return path.slice(root.length + 1);
  return path;
}

function ownerOf(where: string, url: string): string {
  if (url === '') return '(native)';
  if (url.startsWith('node:')) return 'node';
  if (url.includes('/node_modules/')) {
    const parts = where.split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return where.split('/')[0] === 'src' ? 'gateway (src)' : where.split('/')[0]!;
}

/** Reads a `.cpuprofile` and sums self time per function (sample counts × their time deltas). */
export function summariseProfile(file: string, root: string, topN = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the delta to the next sample (V8 records the delta before each sample).
  for (let i = 0; i < samples.length; i++) {
    const us = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + us);
  }
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const perFn = new Map<string, { fn: string; where: string; url: string; us: number }>();
  let idleUs = 0;
  let gcUs = 0;
  for (const [id, us] of selfUs) {
    const f = byId.get(id)?.callFrame;
    if (!f) continue;
    if (f.functionName === '(idle)' || f.functionName === '(program)') idleUs += f.functionName === '(idle)' ? us : 0;
    if (f.functionName === '(garbage collector)') gcUs += us;
    if (f.functionName === '(idle)') continue;
    const where = f.url ? `${shortPath(f.url, root)}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName}@${where}`;
    const entry = perFn.get(key) ?? { fn: f.functionName || '(anonymous)', where, url: f.url, us: 0 };
    entry.us += us;
    perFn.set(key, entry);
  }
  const busyUs = [...perFn.values()].reduce((n, e) => n + e.us, 0) || 1;
  const sorted = [...perFn.values()].sort((a, b) => b.us - a.us);
  const owners = new Map<string, number>();
  for (const e of sorted) {
    const owner = e.fn.startsWith('(') && e.url === '' ? e.fn : ownerOf(e.where, e.url);
    owners.set(owner, (owners.get(owner) ?? 0) + e.us);
  }
  const pct = (us: number): number => Math.round((us / busyUs) * 1000) / 10;
  return {
    totalMs,
    idleMs: idleUs / 1000,
    gcMs: gcUs / 1000,
    top: sorted.slice(0, topN).map((e) => ({ fn: e.fn, where: e.where, selfMs: Math.round(e.us / 100) / 10, selfPct: pct(e.us) })),
    byOwner: [...owners.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([owner, us]) => ({ owner, selfMs: Math.round(us / 100) / 10, selfPct: pct(us) })),
  };
}

/** The summary as markdown: where the busy time goes by owner, then the top functions by self time. */
export function profileMarkdown(summary: ProfileSummary, title: string): string {
  const lines = [
    `# ${title}`,
    '',
    `Profiled ${summary.totalMs.toFixed(0)} ms; idle ${summary.idleMs.toFixed(0)} ms; garbage collection ${summary.gcMs.toFixed(0)} ms. Percentages are of busy (non-idle) time.`,
    '',
    '| owner | self ms | % |',
    '| --- | ---: | ---: |',
    ...summary.byOwner.map((o) => `| ${o.owner} | ${o.selfMs.toFixed(1)} | ${o.selfPct.toFixed(1)} |`),
    '',
    '| function | where | self ms | % |',
    '| --- | --- | ---: | ---: |',
    ...summary.top.map((r) => `| ${r.fn} | ${r.where} | ${r.selfMs.toFixed(1)} | ${r.selfPct.toFixed(1)} |`),
  ];
  return lines.join('\n') + '\n';
}
