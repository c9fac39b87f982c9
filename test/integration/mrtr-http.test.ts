/**
 * MRTR over a legacy streamable-HTTP backend: backend requests are correlated by the stream they
 * arrive on, so concurrent calls share one backend session — and each answer still reaches its own call.
 * Also 100 concurrent calls over a stdio backend (pooled sessions, one call each).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, firstText, startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { wireChecked, wireStats, wireViolations } from '../helpers/gateway.js';
import { startLegacyHttpServer, type LegacyHttpServer } from '../fixtures/legacy-http.js';
import { post } from '../helpers/wire.js';
import type { Client } from '@modelcontextprotocol/client';
import type { LegacyBackend } from '../../src/core/backend/legacy-backend.js';

let backend: LegacyHttpServer;
let httpGw: RunningGateway;
let stdioGw: RunningGateway;

beforeAll(async () => {
  backend = await startLegacyHttpServer();
  // 100 calls may all wait for input at once: raise the per-principal bound (default 64) for this test
  httpGw = await startGateway({ mcpServers: { web: { url: backend.url } }, gateway: { maxParkedPerPrincipal: 200 } });
  stdioGw = await startGateway({ mcpServers: { local: stdioFixture() }, gateway: { maxSessionsPerBackend: 6, sessionWaitMs: 60_000 } });
});
afterAll(async () => {
  await httpGw?.close();
  await stdioGw?.close();
  await backend?.close();
});

/** A client whose elicitation answer echoes the tag found in the message ("tag:<tag>"). */
async function taggingClient(url: string): Promise<Client> {
  const client = await connectClient(url, { elicitation: {} });
  client.setRequestHandler('elicitation/create', async (req) => {
    await new Promise((r) => setTimeout(r, Math.random() * 20));
    return { action: 'accept', content: { value: String(req.params.message).replace(/^tag:/, '') } };
  });
  return client;
}

async function hundredConcurrent(url: string): Promise<string[]> {
  const clients = await Promise.all(Array.from({ length: 10 }, () => taggingClient(url)));
  const calls = Array.from({ length: 100 }, (_, i) =>
    clients[i % clients.length]!.callTool({ name: 'tagged', arguments: { tag: `t${i}` } }, { timeout: 120_000 }).then((r) => firstText(r)),
  );
  const texts = await Promise.all(calls);
  await Promise.all(clients.map((c) => c.close()));
  return texts;
}

describe('MRTR over a streamable-HTTP legacy backend', () => {
  it('completes elicitation, sampling and roots (also a roots/list sent outside the call)', async () => {
    const client = await connectClient(httpGw.url, { elicitation: {}, sampling: {}, roots: {} });
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Lin', color: 'red' } }));
    client.setRequestHandler('sampling/createMessage', async () => ({ role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'm' }));
    client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///a' }] }));
    expect(firstText(await client.callTool({ name: 'elicit_name', arguments: {} }))).toBe('Hello, Lin!');
    expect(firstText(await client.callTool({ name: 'elicit_two', arguments: {} }))).toBe('Lin likes red');
    expect(firstText(await client.callTool({ name: 'sample', arguments: { prompt: 'x' } }))).toBe('LLM: ok');
    expect(firstText(await client.callTool({ name: 'roots', arguments: {} }))).toBe('roots: file:///a');
    // Asked on the session's GET stream while the call waits for it (the reference server's get-roots-list):
    // the call in flight asks its client.
    expect(firstText(await client.callTool({ name: 'roots_unrelated', arguments: {} }, { timeout: 10_000 }))).toBe('roots: file:///a');
    await client.close();
  });

  it('delivers 100 concurrent answers to their own calls over one shared backend session', async () => {
    const texts = await hundredConcurrent(httpGw.url);
    texts.forEach((t, i) => expect(t).toBe(`tag=t${i} answer=t${i}`));
    // one session per capability set seen so far (two), however many calls ran at once
    expect((httpGw.gateway.backends[0] as LegacyBackend).stats.sessions).toBe(2);
  });
});

describe('servers that send a call\u2019s requests outside its stream', () => {
  it('asks a roots/list sent outside any call again of another call in flight when the call first asked ends unanswered', async () => {
    const client = await connectClient(httpGw.url, { roots: {} });
    client.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///waiting' }] }));
    try {
      // The backend asks 400 ms into the first call; by then a second call (a raw client that answers
      // nothing) is the latest in flight, so it is asked first, and it ends (its tool returns) unanswered.
      const waiting = client.callTool({ name: 'roots_unrelated', arguments: { afterMs: 400 } }, { timeout: 15_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const other = await post(httpGw.url, 'tools/call', { name: 'slow', arguments: { id: 'other', ms: 1_500 } }, { caps: { roots: {} } });
      expect(other.message['result']).toMatchObject({ resultType: 'input_required', inputRequests: { roots_1: { method: 'roots/list' } } });
      expect(firstText(await waiting)).toBe('roots: file:///waiting');
    } finally {
      await client.close();
    }
  });

  it('are refused cleanly in shared mode (no hang) and served in exclusive mode', async () => {
    const shared = await post(httpGw.url, 'tools/call', { name: 'elicit_untagged' }, { caps: { elicitation: {} } });
    expect(shared.message['result']).toMatchObject({ isError: true });
    const exclusive = await startGateway({ mcpServers: { web: { url: backend.url, sessionMode: 'exclusive' } } });
    try {
      const client = await connectClient(exclusive.url, { elicitation: {} });
      client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Gus' } }));
      expect(firstText(await client.callTool({ name: 'elicit_untagged', arguments: {} }))).toBe('untagged Gus');
      await client.close();
    } finally {
      await exclusive.close();
    }
  });
});

describe('MRTR over a stdio legacy backend under load', () => {
  it('delivers 100 concurrent answers to their own calls through a bounded session pool', async () => {
    const texts = await hundredConcurrent(stdioGw.url);
    texts.forEach((t, i) => expect(t).toBe(`tag=t${i} answer=t${i}`));
    expect((stdioGw.gateway.backends[0] as LegacyBackend).stats.sessions).toBeLessThanOrEqual(6);
    expect(stdioGw.gateway.engine.size).toBe(0);
  });
});

describe('wire', () => {
  it('sent only schema-valid 2026-07-28 messages to the SDK clients above', async () => {
    await wireChecked(); // the replies' checks read their bodies after the clients did
    expect(wireViolations).toEqual([]);
    expect(wireStats.checked).toBeGreaterThan(0);
  });
});
