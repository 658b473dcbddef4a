/**
 * The visitor's address. Workers: `CF-Connecting-IP` (set by Cloudflare, not by the
 * visitor). Node: the socket's address, or — only when the socket is a trusted proxy
 * (`RELAY_TRUST_PROXY`) — the right-most untrusted address of `X-Forwarded-For`.
 * @module
 */

/** `::ffff:203.0.113.7` → `203.0.113.7`; other addresses unchanged. */
export const normaliseIp = (ip: string): string =>
  ip
    .trim()
    .replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1')
    .replace(/^\[|\]$/g, '');

const ipv4 = (ip: string): number | undefined => {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    const n = Number(part);
    if (!/^\d{1,3}$/.test(part) || n > 255) return undefined;
    value = value * 256 + n;
  }
  return value;
};

/** True when `ip` is one of `trusted` (addresses, or IPv4 CIDR ranges like `10.0.0.0/8`). */
export function isTrusted(ip: string, trusted: readonly string[]): boolean {
  const address = normaliseIp(ip);
  for (const entry of trusted) {
    const [range, bits] = entry.split('/');
    if (bits === undefined) {
      if (normaliseIp(range!) === address) return true;
      continue;
    }
    const a = ipv4(address);
    const r = ipv4(range!);
    const n = Number(bits);
    if (a === undefined || r === undefined || n < 0 || n > 32) continue;
    const mask = n === 0 ? 0 : (0xffffffff << (32 - n)) >>> 0;
    if ((a & mask) >>> 0 === (r & mask) >>> 0) return true;
  }
  return false;
}

/** The client address behind `socket`, believing `forwardedFor` only from trusted proxies. */
export function resolveClientIp(socket: string | undefined, forwardedFor: string | null | undefined, trusted: readonly string[]): string | undefined {
  if (socket === undefined) return undefined;
  const direct = normaliseIp(socket);
  if (!forwardedFor || !isTrusted(direct, trusted)) return direct;
  const hops = forwardedFor.split(',').map(normaliseIp).filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!isTrusted(hops[i]!, trusted)) return hops[i];
  }
  return hops[0] ?? direct;
}
