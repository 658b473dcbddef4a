import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { RelayConfigError } from '../../src/relay/core/errors.js';

const base = { CDP_API_KEY: 'k-123', RELAY_SITES: '[{"key":"pk_a","origins":["https://a.example.com"]}]' };

function errorOf(env: Record<string, string>): RelayConfigError {
  try {
    parseConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(RelayConfigError);
    return error as RelayConfigError;
  }
  throw new Error('parseConfig accepted a bad configuration');
}

describe('parseConfig (the relay configuration)', () => {
  it('applies the documented defaults', () => {
    const config = parseConfig(base);
    expect(config.baseUrl).toBe('https://api.ap3api.com');
    expect(config.addressLookup).toBe(false);
    expect(config.addressLookupMonthlyLimit).toBe(Infinity);
    expect(config.collectPath).toBe('/collect');
    expect(config.scriptPaths).toEqual(['/cdp.js']);
    expect(config.tokens).toEqual([]);
    expect(config.windowMs).toBe(7 * 24 * 3600_000);
    expect(config.platformRate).toBe(10);
    expect(config.deliveryWaitMs).toBe(250);
    expect(config.deliveryLeaseMs).toBe(30_000);
    expect(config.deliveryLeadMs).toBe(5_000);
    expect(config.ambiguous).toBe('hold');
    const site = config.sites.get('pk_a')!;
    expect(site).toMatchObject({
      verify: 'optional',
      subscribeUnverified: false,
      allowNoOrigin: false,
      mergeBy: ['str::email', 'str::ei'],
      activities: undefined,
      fields: undefined,
    });
  });

  it('reads verify "open" and subscribe_unverified', () => {
    const config = parseConfig({ ...base, RELAY_SITES: '[{"key":"pk_o","origins":[],"verify":"open","subscribe_unverified":true}]' });
    expect(config.sites.get('pk_o')).toMatchObject({ verify: 'open', subscribeUnverified: true });
  });

  it("reads a visitor's queue (queue_ms: 1 s by default, 0 turns it off) and says what is wrong with a bad one", () => {
    const sites = (limit: unknown, key = 'visitor_rate_limit') => JSON.stringify([{ key: 'pk_q', origins: [], [key]: limit }]);
    expect(parseConfig(base).sites.get('pk_a')!.visitorRateLimit).toEqual({ perSecond: 10, burst: 50, queueMs: 1_000 });
    expect(parseConfig({ ...base, RELAY_SITES: sites({ per_second: 5 }) }).sites.get('pk_q')!.visitorRateLimit).toEqual({
      perSecond: 5,
      burst: 5,
      queueMs: 1_000,
    });
    expect(parseConfig({ ...base, RELAY_SITES: sites({ per_second: 5, queue_ms: 0 }) }).sites.get('pk_q')!.visitorRateLimit.queueMs).toBe(0);
    for (const queue of [-1, 1.5, '1000', 10_001]) {
      expect(errorOf({ ...base, RELAY_SITES: sites({ per_second: 5, queue_ms: queue }) }).message).toMatch(
        /visitor_rate_limit: queue_ms must be a whole number of ms from 0/,
      );
    }
    // A site's own cap refuses at once: it takes no queue.
    expect(errorOf({ ...base, RELAY_SITES: sites({ per_second: 5, queue_ms: 100 }, 'rate_limit') }).message).toMatch(/rate_limit takes no queue_ms/);
  });

  it('reads the delivery settings and names the variable at fault', () => {
    const config = parseConfig({ ...base, RELAY_DEDUPE_WINDOW_HOURS: '48', RELAY_PLATFORM_RATE: '30', RELAY_DELIVERY_WAIT_MS: '0', RELAY_AMBIGUOUS: 'resend' });
    expect(config).toMatchObject({ windowMs: 48 * 3600_000, platformRate: 30, deliveryWaitMs: 0, ambiguous: 'resend' });
    expect(() => parseConfig({ ...base, RELAY_DEDUPE_WINDOW_HOURS: '0' })).toThrow(/RELAY_DEDUPE_WINDOW_HOURS/);
    expect(() => parseConfig({ ...base, RELAY_PLATFORM_RATE: '0' })).toThrow(/RELAY_PLATFORM_RATE/);
    expect(() => parseConfig({ ...base, RELAY_DELIVERY_WAIT_MS: 'soon' })).toThrow(/RELAY_DELIVERY_WAIT_MS/);
    expect(() => parseConfig({ ...base, RELAY_AMBIGUOUS: 'retry' })).toThrow(/RELAY_AMBIGUOUS/);
  });

  it('reads the lease and lead lock lifetimes and the retry wait, and refuses ones too short to make a call in', () => {
    expect(parseConfig({ ...base, RELAY_DELIVERY_LEASE_MS: '4000', RELAY_DELIVERY_LEAD_MS: '1000', RELAY_DELIVERY_RETRY_MS: '250' })).toMatchObject({
      deliveryLeaseMs: 4_000,
      deliveryLeadMs: 1_000,
      deliveryRetryMs: 250,
    });
    expect(parseConfig(base).deliveryRetryMs).toBe(5_000);
    expect(errorOf({ ...base, RELAY_DELIVERY_RETRY_MS: '10' }).message).toMatch(/RELAY_DELIVERY_RETRY_MS.*at least 100/);
    expect(errorOf({ ...base, RELAY_DELIVERY_LEASE_MS: '3000' }).message).toMatch(/RELAY_DELIVERY_LEASE_MS.*at least 3500/);
    expect(errorOf({ ...base, RELAY_DELIVERY_LEASE_MS: 'long' }).message).toMatch(/RELAY_DELIVERY_LEASE_MS/);
    expect(errorOf({ ...base, RELAY_DELIVERY_LEAD_MS: '100' }).message).toMatch(/RELAY_DELIVERY_LEAD_MS.*at least 500/);
  });

  it('reads what unproven items may take of a site, half the outbox and 600 new people a minute by default', () => {
    expect(parseConfig(base).unproven).toEqual({ share: 0.5, peoplePerMinute: 600 });
    expect(parseConfig({ ...base, RELAY_OUTBOX_UNPROVEN_SHARE: '1', RELAY_UNPROVEN_PEOPLE_PER_MINUTE: '60' }).unproven).toEqual({
      share: 1,
      peoplePerMinute: 60,
    });
  });

  it('picks the region base, and CDP_BASE_URL wins over it', () => {
    expect(parseConfig({ ...base, CDP_REGION: 'eu' }).baseUrl).toBe('https://api.eu.ap3api.com');
    expect(parseConfig({ ...base, CDP_REGION: 'eu', CDP_BASE_URL: 'http://127.0.0.1:8790/' }).baseUrl).toBe('http://127.0.0.1:8790');
  });

  it('reads the optional variables', () => {
    const config = parseConfig({
      ...base,
      RELAY_ADDRESS_LOOKUP: 'on',
      RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT: '1000',
      RELAY_TRUST_PROXY: '10.0.0.1, 192.168.0.0/16',
      RELAY_SCRIPT_PATH: '/assets/app.js',
      RELAY_TOKENS: JSON.stringify([{ name: 'crm', sha256: 'a'.repeat(64), scopes: ['read'] }]),
    });
    expect(config.addressLookup).toBe(true);
    expect(config.addressLookupMonthlyLimit).toBe(1000);
    expect(config.identityLegacyHash).toBe(false);
    expect(parseConfig({ ...base, RELAY_IDENTITY_LEGACY_HASH: 'on' }).identityLegacyHash).toBe(true);
    expect(config.trustProxy).toEqual(['10.0.0.1', '192.168.0.0/16']);
    expect(config.scriptPaths).toEqual(['/cdp.js', '/assets/app.js']);
    expect(config.tokens.map((token) => token.name)).toEqual(['crm']);
  });

  it.each([
    [{ CDP_API_KEY: '' }, 'CDP_API_KEY'],
    [{ CDP_REGION: 'mars' }, 'CDP_REGION'],
    [{ CDP_BASE_URL: 'ftp://x' }, 'CDP_BASE_URL'],
    [{ RELAY_SITES: '{not json' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '{"key":"pk"}' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":["https://a.example.com/path"]}]' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":[],"verify":"sometimes"}]' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":[],"activities":["signed-up"]}]' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":[],"fields":["str:o:name"]}]' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":[]},{"key":"pk","origins":[]}]' }, 'RELAY_SITES'],
    [{ RELAY_SITES: '[{"key":"pk","origins":[],"verify":"required"}]' }, 'RELAY_IDENTITY_SECRET'],
    [{ RELAY_IDENTITY_SECRET: 'short' }, 'RELAY_IDENTITY_SECRET'],
    [{ RELAY_IDENTITY_LEGACY_HASH: 'yes' }, 'RELAY_IDENTITY_LEGACY_HASH'],
    [{ RELAY_ADDRESS_LOOKUP: 'yes' }, 'RELAY_ADDRESS_LOOKUP'],
    [{ RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT: 'lots' }, 'RELAY_ADDRESS_LOOKUP_MONTHLY_LIMIT'],
    [{ RELAY_TRUST_PROXY: 'my-proxy' }, 'RELAY_TRUST_PROXY'],
    [{ RELAY_TOKENS: '[{"name":"x"}]' }, 'RELAY_TOKENS'],
    [{ RELAY_SCRIPT_PATH: 'cdp.js' }, 'RELAY_SCRIPT_PATH'],
    [{ RELAY_OUTBOX_UNPROVEN_SHARE: '0' }, 'RELAY_OUTBOX_UNPROVEN_SHARE'],
    [{ RELAY_OUTBOX_UNPROVEN_SHARE: '1.5' }, 'RELAY_OUTBOX_UNPROVEN_SHARE'],
    [{ RELAY_UNPROVEN_PEOPLE_PER_MINUTE: '0.5' }, 'RELAY_UNPROVEN_PEOPLE_PER_MINUTE'],
  ])('names the variable at fault: %j', (override, variable) => {
    const error = errorOf({ ...base, ...override } as Record<string, string>);
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(`${variable}: `)).toBe(true);
  });

  it('never puts the key into an error message', () => {
    const error = errorOf({ CDP_API_KEY: 'sk_live_very_secret', CDP_REGION: 'mars' });
    expect(error.message).not.toContain('sk_live_very_secret');
  });
});
