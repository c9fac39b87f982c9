import { describe, expect, it } from 'vitest';
import { createMetrics, noMetrics } from '../../src/observe/metrics.js';
import { parseExposition } from '../helpers/prometheus.js';

describe('metrics', () => {
  it('counts exchanges, and a requestState refusal also by its reason', async () => {
    const m = createMetrics({ processMetrics: false });
    m.exchange('mcp', 'tools/call', 'complete', 0.02, 'alice');
    m.exchange('mcp', 'tools/call', 'request_state_stale', 0.001, 'alice');
    const x = parseExposition((await m.scrape()).text);
    expect(x.value('mcp_gateway_requests_total{front="mcp",method="tools/call",outcome="complete"}')).toBe(1);
    expect(x.value('mcp_gateway_request_state_failures_total{reason="stale"}')).toBe(1);
    // every reason has its series from the start (a rate over it needs one before the first refusal)
    expect(x.value('mcp_gateway_request_state_failures_total{reason="expired"}')).toBe(0);
    expect(x.value('mcp_gateway_request_state_failures_total{reason="instance"}')).toBe(0);
    expect(x.value('mcp_gateway_request_duration_seconds_bucket{front="mcp",method="tools/call",le="0.025"}')).toBe(2);
    expect(x.has('process_cpu_user_seconds_total')).toBe(false);
    // No principal is a label unless the operator lists it.
    expect(x.labelValues().has('alice')).toBe(false);
  });

  it('counts the principals the operator listed by name, every other as other', async () => {
    const m = createMetrics({ processMetrics: false, principals: ['alice'] });
    m.exchange('mcp', 'tools/call', 'complete', 0.01, 'alice');
    m.exchange('mcp', 'tools/call', 'complete', 0.01, 'mallory-01J0000000000000000000000');
    m.exchange('legacy', 'tools/call', 'backend_unavailable', 0.01, 'bob');
    const x = parseExposition((await m.scrape()).text);
    expect(x.value('mcp_gateway_principal_requests_total{principal="alice",outcome="complete"}')).toBe(1);
    expect(x.value('mcp_gateway_principal_requests_total{principal="other",outcome="complete"}')).toBe(1);
    expect(x.value('mcp_gateway_principal_requests_total{principal="other",outcome="backend_unavailable"}')).toBe(1);
    expect([...x.labelValues()].filter((v) => /mallory|bob/.test(v))).toEqual([]);
  });

  it('labels a backend a client added at run time as added, and reads 0 parked calls and 0 tasks rather than nothing', async () => {
    const m = createMetrics({ processMetrics: false, backends: ['files'] });
    m.backendConnection('files', 'connected');
    m.backendConnection('client-chosen-7f3a', 'connected');
    m.poolWait('client-chosen-7f3a', 0.01);
    m.read({ parked: () => [], tasks: () => ({}) });
    const x = parseExposition((await m.scrape()).text);
    expect(x.value('mcp_gateway_backend_connection_changes_total{backend="files",change="connected"}')).toBe(1);
    expect(x.value('mcp_gateway_backend_connection_changes_total{backend="added",change="connected"}')).toBe(1);
    expect([...x.labelValues()].filter((v) => v.includes('client-chosen'))).toEqual([]);
    expect(x.value('mcp_gateway_parked_calls{backend="files"}')).toBe(0);
    expect(x.value('mcp_gateway_tasks{status="working"}')).toBe(0);
  });

  it('reads gauges at each scrape; a source that throws leaves its gauge empty and the scrape whole', async () => {
    const m = createMetrics({ processMetrics: false });
    let parked = [{ backend: 'a', ageSeconds: 3 }];
    m.read({
      parked: () => parked,
      tasks: () => {
        throw new Error('unreadable');
      },
      backends: () => [{ name: 'a', state: 'up', failures: 0, pool: { sessions: 3, busy: 1, waiting: 2, connecting: 0 } }],
    });
    let x = parseExposition((await m.scrape()).text);
    expect(x.value('mcp_gateway_parked_calls{backend="a"}')).toBe(1);
    expect(x.value('mcp_gateway_parked_call_age_seconds_bucket{le="2.5"}')).toBe(0);
    expect(x.value('mcp_gateway_parked_call_age_seconds_bucket{le="5"}')).toBe(1);
    expect(x.value('mcp_gateway_backend_sessions{backend="a",state="idle"}')).toBe(2);
    expect(x.value('mcp_gateway_backend_sessions{backend="a",state="queued"}')).toBe(2);
    expect(x.has('mcp_gateway_tasks{status="working"}')).toBe(false);
    expect(x.has('mcp_gateway_redis_up')).toBe(false);
    parked = [];
    x = parseExposition((await m.scrape()).text);
    expect(x.has('mcp_gateway_parked_calls{backend="a"}')).toBe(false);
    expect(x.count('mcp_gateway_parked_call_age_seconds')).toBe(0);
  });

  it('counts the client connections the Node server closed itself, by reason', async () => {
    const m = createMetrics();
    m.connectionClosed('send_timeout');
    m.connectionClosed('send_timeout');
    m.connectionClosed('max_connections');
    const { text } = await m.scrape();
    expect(text).toContain('mcp_gateway_connections_closed_total{reason="send_timeout"} 2');
    expect(text).toContain('mcp_gateway_connections_closed_total{reason="max_connections"} 1');
  });

  it('off: nothing is counted and the scrape is empty', async () => {
    noMetrics.exchange('mcp', 'tools/call', 'complete', 1, 'alice');
    expect(noMetrics.enabled).toBe(false);
    expect((await noMetrics.scrape()).text).toBe('');
  });
});
