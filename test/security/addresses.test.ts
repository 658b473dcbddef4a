// Attack: rotate through the addresses of one IPv6 /64 (a subscriber's own network) to get a fresh
// rate-limit bucket per request; or, behind a trusted proxy, smuggle a value that is not an address
// in X-Forwarded-For so it becomes the visitor's address and the platform's `source_ip`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { limitAddress, resolveClientIp } from '../../src/relay/core/client-ip.js';
import { RelayConfigError } from '../../src/relay/core/errors.js';
import { collect, goodTrack, KEY, SITE, type Stack, startStack } from './support.js';

describe('IPv6 visitors are limited per network', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      env: { RELAY_SITES: JSON.stringify([{ key: SITE, origins: ['https://shop.example.com'], visitor_rate_limit: { per_second: 0.5, burst: 20 } }]) },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('gives 120 addresses of one /64 one bucket, and another /64 its own', async () => {
    const statuses: number[] = [];
    const started = Date.now();
    for (let i = 1; i <= 120; i++) {
      const response = await collect(stack.relay.url, `2001:db8:aa:bb:${i.toString(16)}:0:0:${(i * 7).toString(16)}`, [goodTrack(`six${i}@example.com`)]);
      statuses.push(response.status);
      await response.body?.cancel();
    }
    // the burst of 20, plus what refilled (0.5 a second) while the loop ran
    const allowed = 20 + Math.ceil(((Date.now() - started) / 1000) * 0.5);
    expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(allowed);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(120 - allowed);
    const neighbour = await collect(stack.relay.url, '2001:db8:aa:cc::1', [goodTrack('next-door@example.com')]);
    expect(neighbour.status).toBe(200);
  }, 30_000);

  it('keys by the configured prefix, and names RELAY_IPV6_PREFIX when it is wrong', () => {
    expect(limitAddress('2001:db8:aa:bb:1:2:3:4', 64)).toBe('2001:db8:aa:bb:0:0:0:0/64');
    expect(limitAddress('2001:db8:aa:bb::ffff', 64)).toBe(limitAddress('2001:db8:aa:bb:ffff::1', 64));
    expect(limitAddress('2001:db8:aa:bb::1', 48)).toBe(limitAddress('2001:db8:aa:cc::1', 48));
    expect(limitAddress('2001:db8:aa:bb::1', 128)).toBe('2001:db8:aa:bb::1');
    expect(limitAddress('203.0.113.9', 64)).toBe('203.0.113.9');
    const env = { CDP_API_KEY: KEY, RELAY_IPV6_PREFIX: '200' };
    expect(() => parseConfig(env)).toThrow(RelayConfigError);
    expect(() => parseConfig(env)).toThrow(/RELAY_IPV6_PREFIX/);
    expect(parseConfig({ CDP_API_KEY: KEY }).ipv6Prefix).toBe(64);
  });
});

describe('X-Forwarded-For from a trusted proxy', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ record: true });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('is believed only when every hop is an IP address, and nothing else becomes source_ip', async () => {
    for (const forwarded of ['<script>alert(1)</script>', 'unknown', '198.51.100.4, not-an-ip', 'a'.repeat(600)]) {
      const response = await fetch(`${stack.relay.url}/collect`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: 'https://shop.example.com', 'x-forwarded-for': forwarded },
        body: JSON.stringify({ key: SITE, batch: [goodTrack('xff@example.com')] }),
      });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    }
    await stack.relay.drained();
    const sent = (
      (await (await fetch(`${stack.recorder!.url}/__control/received`)).json()) as {
        path: string;
        body: { activities?: { location?: { source_ip?: string } }[] };
      }[]
    )
      .filter((call) => call.path === '/v1/activities/create')
      .flatMap((call) => call.body.activities ?? [])
      .map((activity) => activity.location?.source_ip);
    expect(sent.length).toBe(4);
    // the socket's own address (loopback), never the header's text
    expect(new Set(sent)).toEqual(new Set(['127.0.0.1']));
    expect(resolveClientIp('10.0.0.1', 'garbage', ['10.0.0.1'])).toBe('10.0.0.1');
    expect(resolveClientIp('10.0.0.1', '2001:db8::7', ['10.0.0.1'])).toBe('2001:db8::7');
  });
});
