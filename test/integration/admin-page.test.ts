/**
 * The admin page in a real browser (Debian's chromium, driven by playwright-core) against a real
 * gateway and legacy stdio backend: the page is open before the call is parked and sees it appear
 * through its live updates; the operator cancels it from the page and the client's retry gets
 * `request_state_gone`. With `ADMIN_SCREENSHOT=<file.png>` it also saves the page as README shows it.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveAdmin, type RunningAdmin } from '../helpers/admin.js';
import { startGateway, stdioFixture, type RunningGateway } from '../helpers/gateway.js';
import { until } from '../helpers/until.js';
import { post } from '../helpers/wire.js';

const KEY = 'client-key-0123456789';
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
let gw: RunningGateway;
let admin: RunningAdmin;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  gw = await startGateway(
    {
      mcpServers: { legacy: { ...stdioFixture(), isolation: 'shared' }, other: { ...stdioFixture() } },
      gateway: { coalesceMs: 0, apiKeys: [{ principal: 'alice', key: KEY }], admin: { port: 0, keyEnv: 'ADMIN_KEY', refreshMs: 200, sampleMs: 500 } },
    },
    { env: { ADMIN_KEY } },
  );
  admin = await serveAdmin(gw);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await admin?.close();
  await gw?.close();
});

async function rpc(params: Record<string, unknown>) {
  return (await post(gw.url, 'tools/call', params, { caps: { elicitation: {} }, headers: { authorization: `Bearer ${KEY}` } })).message as {
    result?: { requestState?: string; resultType?: string };
    error?: { code: number; data?: { reason?: string } };
  };
}

async function openPage(): Promise<Page> {
  const context = await browser.newContext({ httpCredentials: { username: 'operator', password: ADMIN_KEY }, viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  await page.goto(admin.url);
  return page;
}

describe('the admin page in a browser', () => {
  it('sees a parked call appear, cancels it from the page, and the retry gets request_state_gone', async () => {
    const page = await openPage();
    expect(await page.locator('#parked').textContent()).toContain('No call is waiting for input.');
    expect(await page.locator('#backends').textContent()).toContain('legacy');

    const ir = await rpc({ name: 'legacy__elicit_name' });
    const state = ir.result?.requestState;
    expect(state).toBeDefined();
    const row = page.locator('#parked tr[data-call]', { hasText: 'elicit_name' });
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toMatch(/alice[\s\S]*legacy[\s\S]*tools\/call[\s\S]*elicit_name/);
    if (process.env['ADMIN_SCREENSHOT']) await screenshot(page);

    page.once('dialog', (d) => {
      d.accept().catch(() => undefined);
    });
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.waitFor({ state: 'detached', timeout: 15_000 });
    await until('the page to say the action was done', async () => (await page.locator('#status').textContent()) === 'Done.');

    const retry = await rpc({
      name: 'legacy__elicit_name',
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      requestState: state,
    });
    expect(retry.error?.data?.reason).toBe('request_state_gone');
    await page.context().close();
  }, 60_000);
});

/** Some traffic for the charts (a few samples), a second parked call, then the PNG. */
async function screenshot(page: Page): Promise<void> {
  for (let i = 0; i < 12; i++) {
    await Promise.all(Array.from({ length: 5 + (i % 4) * 3 }, (_, j) => rpc({ name: 'legacy__echo', arguments: { text: `${i}-${j}` } })));
    if (i % 5 === 0) await rpc({ name: 'legacy__fail_rpc', arguments: { id: String(i) } });
    await page.waitForTimeout(250);
  }
  await rpc({ name: 'other__elicit_two' });
  await page.locator('#parked tr[data-call]', { hasText: 'elicit_two' }).waitFor({ timeout: 15_000 });
  await page.screenshot({ path: process.env['ADMIN_SCREENSHOT']!, fullPage: true });
}
