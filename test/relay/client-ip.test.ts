import { describe, expect, it } from 'vitest';
import { isTrusted, resolveClientIp } from '../../src/relay/core/client-ip.js';

describe('the visitor address on Node', () => {
  it('is the socket address when the socket is not a trusted proxy, whatever X-Forwarded-For says', () => {
    expect(resolveClientIp('203.0.113.5', '1.2.3.4', [])).toBe('203.0.113.5');
    expect(resolveClientIp('::ffff:203.0.113.5', '1.2.3.4', ['10.0.0.1'])).toBe('203.0.113.5');
  });

  it('is the right-most untrusted hop when the socket is a trusted proxy', () => {
    // A visitor may prepend anything: only what trusted proxies appended is believed.
    expect(resolveClientIp('10.0.0.1', '6.6.6.6, 198.51.100.7', ['10.0.0.1'])).toBe('198.51.100.7');
    expect(resolveClientIp('10.0.0.1', '6.6.6.6, 198.51.100.7, 10.0.0.2', ['10.0.0.0/8'])).toBe('198.51.100.7');
    expect(resolveClientIp('10.0.0.1', undefined, ['10.0.0.1'])).toBe('10.0.0.1');
  });

  it('matches addresses and IPv4 ranges', () => {
    expect(isTrusted('192.168.4.2', ['192.168.0.0/16'])).toBe(true);
    expect(isTrusted('192.169.4.2', ['192.168.0.0/16'])).toBe(false);
    expect(isTrusted('::1', ['::1'])).toBe(true);
    expect(isTrusted('::ffff:127.0.0.1', ['127.0.0.1'])).toBe(true);
    expect(isTrusted('8.8.8.8', ['0.0.0.0/0'])).toBe(true);
  });
});
