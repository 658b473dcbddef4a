/**
 * The relay's logs of a whole demo run hold nothing personal or secret. `cdp-edge dev`'s stack
 * at RELAY_LOG=debug (a line per request and one per item): a visitor in Chromium signs up (the
 * demo server signs the email: a user_hash), consents and shops; a server calls the proxy with
 * its token and with a wrong one; a forged identify is refused. Then every log line is searched
 * for the platform key, the tokens, the identity secret, email addresses and hashes.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { EMULATOR_KEY, startDevStack, type DevStack } from '../../src/demo/stack.js';
import type { LogLine } from '../../src/relay/core/logging.js';
import { leaksIn } from '../support/leaks.js';
import { chromiumAvailable, launchChromium } from './chromium.js';

const available = chromiumAvailable('log leaks over a demo run (test/e2e/log-leaks.test.ts)');

describe.runIf(available)("the relay's logs of a whole demo run", () => {
  let stack: DevStack;
  let browser: Browser;
  const lines: LogLine[] = [];
  const email = `leak-check-${Date.now()}@example.com`;

  beforeAll(async () => {
    stack = await startDevStack({
      emulatorPort: { port: 0 },
      relayPort: { port: 0 },
      demoPort: { port: 0 },
      logLevel: 'debug',
      logger: (line) => void lines.push(line),
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('name no key, token, secret, email address or hash', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.demo.url}/`);
    await page.waitForFunction(() => (window as unknown as { cdp?: { loaded?: boolean } }).cdp?.loaded === true);
    await page.locator('.product', { hasText: 'Shortbread' }).getByRole('button', { name: 'Add to cart' }).click();
    await page.fill('input[name=email]', email);
    await page.fill('input[name=first]', 'Eve');
    await page.click('#signup button[type=submit]');
    await page.click('#accept');
    const client = createClient({ apiKey: EMULATOR_KEY, baseUrl: stack.emulator!.url, retry: false });
    await expect
      .poll(
        async () =>
          (
            await client.person.get({
              filter: { $andgroup: [{ '$str::is': { field_id: 'str::email', value: email } }, { '$act::has_occurred': { field_id: 'act:cm:signed-up' } }] },
            })
          ).contacts?.length,
        { timeout: 15_000 },
      )
      .toBe(1);

    // A server through the proxy, with its token and with a wrong one.
    const proxy = (token: string) =>
      fetch(`${stack.relay.url}/v1/person/get`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ limit: 1 }),
      });
    expect((await proxy(stack.readToken)).status).toBe(200);
    expect((await proxy(`rt_${'x'.repeat(43)}`)).status).toBe(401);
    // A forged identify: someone else's email with a made-up hash is refused.
    const forged = await fetch(`${stack.relay.url}/collect`, {
      method: 'POST',
      headers: { origin: stack.demo.url, 'content-type': 'text/plain' },
      body: JSON.stringify({
        key: stack.siteKey,
        batch: [{ id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': 'victim@example.com' }, user_hash: 'ab'.repeat(32) }],
      }),
    });
    expect((await forged.json()).results[0].status).toBe('rejected');
    await page.close();

    const kinds = new Set(lines.map((line) => line.kind));
    expect([...kinds]).toEqual(expect.arrayContaining(['collect', 'item', 'proxy']));
    const text = lines.map((line) => JSON.stringify(line)).join('\n');
    expect(leaksIn(text, [EMULATOR_KEY, stack.readToken, stack.identitySecret])).toEqual([]);
  }, 60_000);
});
