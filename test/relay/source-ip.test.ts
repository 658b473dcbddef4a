// The per-site `source_ip` setting: how much of the visitor's address goes to the platform.
// The relay's forwarding in each mode is in the shared suite (test/relay/suite/enrichment-cases.ts).
import { describe, expect, it } from 'vitest';
import { normaliseIp, shownAddress } from '../../src/relay/core/client-ip.js';
import { parseSites } from '../../src/relay/core/sites.js';
import { cfCustom, enrichmentOf } from '../../src/relay/ingest/enrich.js';

describe('source_ip', () => {
  it('full keeps the address, truncated keeps an IPv4 /24 or an IPv6 /48, none keeps nothing', () => {
    expect(shownAddress('203.0.113.77', 'full')).toBe('203.0.113.77');
    expect(shownAddress('203.0.113.77', 'truncated')).toBe('203.0.113.0');
    expect(shownAddress('2001:db8:abcd:12:34::7', 'truncated')).toBe('2001:db8:abcd::');
    expect(shownAddress('2001:0db8:0001:ffff:0000:0000:0000:0001', 'truncated')).toBe('2001:db8:1::');
    expect(shownAddress('::1', 'truncated')).toBe('0:0:0::');
    expect(shownAddress(normaliseIp('::ffff:198.51.100.9'), 'truncated')).toBe('198.51.100.0');
    expect(shownAddress('203.0.113.77', 'none')).toBeUndefined();
    expect(shownAddress('not-an-address', 'truncated')).toBeUndefined();
    expect(shownAddress(undefined, 'full')).toBeUndefined();
  });

  it('is "full" unless the site says otherwise, and refuses any other value naming the variable', () => {
    const sites = parseSites(JSON.stringify([{ key: 'pk_a' }, { key: 'pk_b', source_ip: 'truncated' }, { key: 'pk_c', source_ip: 'none' }]));
    expect([...sites.values()].map((site) => site.sourceIp)).toEqual(['full', 'truncated', 'none']);
    expect(() => parseSites(JSON.stringify([{ key: 'pk_d', source_ip: 'anonymised' }]))).toThrow(
      /RELAY_SITES.*source_ip must be "full", "truncated" or "none"/,
    );
  });

  it("takes from Cloudflare's geolocation only what the address would give: no point when truncated, nothing when none", () => {
    const cf = { country: 'FR', city: 'Lyon', latitude: '45.75', longitude: '4.85' };
    expect(enrichmentOf({ ip: '203.0.113.77', cf }, false, 'full')).toMatchObject({ ip: '203.0.113.77', custom: cfCustom(cf) });
    expect(enrichmentOf({ ip: '203.0.113.77', cf }, false, 'truncated')).toMatchObject({
      ip: '203.0.113.0',
      custom: { country_name: expect.any(String), city_name: 'Lyon' },
    });
    expect(enrichmentOf({ ip: '203.0.113.77', cf }, false, 'truncated').custom).not.toHaveProperty('lat');
    expect(enrichmentOf({ ip: '203.0.113.77', cf }, false, 'none')).toMatchObject({ ip: undefined, custom: undefined });
  });
});
