/**
 * The admin page, rendered on the server (hono/html: every value escaped): a shell with one element
 * per section, and the sections themselves, which `/events` sends again every few seconds and the
 * page's script (admin-script.ts) swaps in. One renderer for the first paint and the updates; the
 * browser builds nothing from data. Shows what the gateway holds, never inputs, answers or states.
 */
import { html, raw } from 'hono/html';
import type { AdminSample, AdminSnapshot } from './admin-view.js';

type Sections = Record<'summary' | 'charts' | 'backends' | 'parked' | 'tasks' | 'cluster', string>;

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1d232a;background:#f7f8fa}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1rem;margin:1.4rem 0 .4rem}
table{border-collapse:collapse;background:#fff;min-width:40rem}th,td{padding:.3rem .6rem;border-bottom:1px solid #e3e6ea;text-align:left}
th{font-weight:600;background:#eef1f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.up{color:#0a7a3d}.down{color:#b42318}.connecting{color:#9a6700}.muted{color:#6b7480}
button{font:inherit;padding:.15rem .6rem;border:1px solid #b42318;color:#b42318;background:#fff;border-radius:4px;cursor:pointer}
.charts{display:flex;gap:1.2rem;flex-wrap:wrap}.chart{background:#fff;padding:.5rem .7rem;border:1px solid #e3e6ea;border-radius:6px}
.chart b{display:block;font-size:1.2rem}svg{display:block}#status{min-height:1.2em}`;

export function renderPage(s: AdminSnapshot): string {
  const sections = renderSections(s);
  const part = (id: keyof Sections) => raw(`<div id="${id}">${sections[id]}</div>`);
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>mcp-mrtr-gateway admin · ${s.instanceId}</title>
        <style>
          ${raw(STYLE)}
        </style>
        <script src="/admin.js" defer></script>
      </head>
      <body>
        ${part('summary')}
        <p id="status" class="muted" role="status"></p>
        ${part('charts')}
        <h2>Backends</h2>
        ${part('backends')}
        <h2>Parked calls</h2>
        ${part('parked')}
        <h2>Tasks</h2>
        ${part('tasks')} ${part('cluster')}
      </body>
    </html>`.toString();
}

/** Each section's HTML, by element id. */
export function renderSections(s: AdminSnapshot): Sections {
  return {
    summary: html`<h1>mcp-mrtr-gateway · ${s.instanceId}</h1>
      <p>
        <span data-state="${s.state}">${s.state}</span> · updated ${new Date(s.at).toISOString()} · ${s.sessions.legacy} legacy sessions · ${s.sessions.listen}
        listen streams ${s.state === 'serving' ? html`<button data-action="/drain" data-confirm="Drain this instance?">Drain</button>` : ''}
      </p>`.toString(),
    charts: renderCharts(s.history),
    backends: table(
      ['Backend', 'State', 'Failures', 'Sessions busy/idle', 'Queued', 'Last error'],
      s.backends.map(
        (b) =>
          html`<tr>
            <td>${b.name}</td>
            <td class="${b.state}">${b.state}</td>
            <td class="n">${b.failures}</td>
            <td class="n">${b.pool ? `${b.pool.busy}/${b.pool.sessions - b.pool.busy}` : '—'}</td>
            <td class="n">${b.pool?.waiting ?? '—'}</td>
            <td class="muted">${b.lastError ?? ''}</td>
          </tr>`,
      ),
    ),
    parked: table(
      ['Call', 'Principal', 'Backend', 'Method', 'Name', 'Round', 'Waiting', ''],
      s.parked.map(
        (p) =>
          html`<tr data-call="${p.id}">
            <td><code>${p.id}</code></td>
            <td>${p.principal}</td>
            <td>${p.backend}</td>
            <td>${p.method}</td>
            <td>${p.name ?? ''}</td>
            <td class="n">${p.round}</td>
            <td class="n">${seconds(p.ageMs)}</td>
            <td><button data-action="/calls/${encodeURIComponent(p.id)}/cancel" data-confirm="Cancel this call?">Cancel</button></td>
          </tr>`,
      ),
      'No call is waiting for input.',
    ),
    tasks: table(
      ['Task', 'Principal', 'Backend', 'Status', 'Age', ''],
      s.tasks.map(
        (t) =>
          html`<tr data-task="${t.id}">
            <td><code>${t.id}</code></td>
            <td>${t.principal}</td>
            <td>${t.backend}</td>
            <td>${t.status}</td>
            <td class="n">${seconds(t.ageMs)}</td>
            <td>
              ${
                TERMINAL.has(t.status)
                  ? ''
                  : html`<button data-action="/tasks/${encodeURIComponent(t.id)}/cancel" data-confirm="Cancel this task?">Cancel</button>`
              }
            </td>
          </tr>`,
      ),
      'No task is held.',
    ),
    cluster: renderCluster(s),
  };
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function renderCluster(s: AdminSnapshot): string {
  const breakers = Object.entries(s.breakers).filter(([, n]) => n > 0);
  const instances = s.instances
    ? html`<h2>Instances</h2>
        ${raw(
          table(
            ['Instance', 'Address'],
            s.instances.map(
              (i) =>
                html`<tr>
                  <td>${i.id}${i.self ? html` <span class="muted">(this one)</span>` : ''}</td>
                  <td>${i.url ?? ''}</td>
                </tr>`,
            ),
          ),
        )}`
    : '';
  const gates = breakers.length
    ? html`<h2>Sampling breakers</h2>
        <p>${breakers.map(([state, n]) => `${n} ${state}`).join(' · ')}</p>`
    : '';
  return html`${instances}${gates}`.toString();
}

function table(head: readonly string[], rows: readonly unknown[], empty = 'None.'): string {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`.toString();
  return html`<table>
    <thead>
      <tr>
        ${head.map((h) => html`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`.toString();
}

const seconds = (ms: number): string => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`);

/** Three small line charts over the samples kept (a few minutes). */
function renderCharts(history: readonly AdminSample[]): string {
  const charts: [string, (x: AdminSample) => number, string][] = [
    ['Requests/s', (x) => x.requestsPerSecond, '#2563eb'],
    ['Parked calls', (x) => x.parked, '#9a6700'],
    ['Errors/s', (x) => x.errorsPerSecond, '#b42318'],
  ];
  return html`<div class="charts">
    ${charts.map(([title, value, color]) => {
      const last = history.at(-1);
      return html`<div class="chart">
        <span class="muted">${title}</span><b>${last ? round(value(last)) : 0}</b>${raw(sparkline(history.map(value), color))}
      </div>`;
    })}
  </div>`.toString();
}

const round = (n: number): number => Math.round(n * 10) / 10;

function sparkline(values: readonly number[], color: string): string {
  const w = 240;
  const h = 48;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - (v / max) * (h - 2) - 1).toFixed(1)}`).join(' ');
  return `<svg width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" aria-hidden="true"><polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points}"/></svg>`;
}
