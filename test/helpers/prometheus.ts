/**
 * Reads the Prometheus text exposition a scrape returns: each sample by its series (`name{a="1",b="2"}`,
 * labels in any order), and every label value seen.
 */
export interface Exposition {
  /** The sample of `series`, 0 when there is none (a counter not yet moved). */
  value(series: string): number;
  has(series: string): boolean;
  /** A histogram's `_count` (without labels). */
  count(histogram: string): number;
  labelValues(): Set<string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** `name{labels}` with its labels sorted by name, as a map key. */
function seriesKey(name: string, labels: [string, string][]): string {
  if (labels.length === 0) return name;
  const sorted = [...labels].sort(([a], [b]) => a.localeCompare(b));
  return `${name}{${sorted.map(([k, v]) => `${k}="${v}"`).join(',')}}`;
}

function parseSeries(series: string): string {
  const m = /^([^{]+)(?:\{(.*)\})?$/.exec(series.trim());
  if (!m) throw new Error(`not a series: ${series}`);
  return seriesKey(
    m[1]!,
    [...(m[2] ?? '').matchAll(LABEL)].map((l) => [l[1]!, l[2]!]),
  );
}

export function parseExposition(text: string): Exposition {
  const samples = new Map<string, number>();
  const values = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unreadable exposition line: ${line}`);
    const labels = [...(m[2] ?? '').matchAll(LABEL)].map((l): [string, string] => [l[1]!, l[2]!]);
    for (const [, v] of labels) values.add(v);
    samples.set(seriesKey(m[1]!, labels), Number(m[3]));
  }
  return {
    value: (series) => samples.get(parseSeries(series)) ?? 0,
    has: (series) => samples.has(parseSeries(series)),
    count: (histogram) => samples.get(`${histogram}_count`) ?? 0,
    labelValues: () => values,
  };
}
