/**
 * The visitor's address. Workers: `CF-Connecting-IP` (set by Cloudflare, not by the
 * visitor). Node: the socket's address, or — only when the socket is a trusted proxy
 * (`RELAY_TRUST_PROXY`) — the right-most untrusted address of `X-Forwarded-For`, believed only
 * when every hop in it is an IP address. Rate limits key IPv6 visitors by their network prefix
 * (`RELAY_IPV6_PREFIX`, /64 by default): one home or phone gets a whole /64.
 * @module
 */

/** `::ffff:203.0.113.7` → `203.0.113.7`; other addresses unchanged. */
export const normaliseIp = (ip: string): string =>
  // An IPv4 address (most of them) has nothing to unwrap.
  !ip.includes(':') && !ip.includes('[') && !ip.includes(']')
    ? ip.trim()
    : ip
        .trim()
        .replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1')
        .replace(/^\[|\]$/g, '');

/** An IPv4 address as a number: four parts of 1 to 3 digits, each at most 255 (read in one pass: every hop of every request is checked). */
const ipv4 = (ip: string): number | undefined => {
  let value = 0;
  let parts = 0;
  let part = 0;
  let digits = 0;
  for (let i = 0; i <= ip.length; i++) {
    const c = i < ip.length ? ip.charCodeAt(i) : 46; // the end closes the last part, as a dot would
    if (c === 46) {
      if (digits === 0 || part > 255 || ++parts > 4) return undefined;
      value = value * 256 + part;
      part = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57 && ++digits <= 3) part = part * 10 + (c - 48);
    else return undefined;
  }
  return parts === 4 ? value : undefined;
};

/** The eight 16-bit groups of an IPv6 address (with `::` and a dotted IPv4 tail), or undefined when `ip` is not one. */
export function ipv6Groups(ip: string): number[] | undefined {
  if (ip.length > 45 || !ip.includes(':')) return undefined;
  const halves = ip.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = ipv4(piece);
        if (v4 === undefined) return undefined;
        groups.push(Math.floor(v4 / 65536), v4 % 65536);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) groups.push(Number.parseInt(piece, 16));
      else return undefined;
    }
    return groups;
  };
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  return [...head, ...Array<number>(missing).fill(0), ...tail];
}

/** True when `ip` (normalised) is an IPv4 or IPv6 address. */
export const isIp = (ip: string): boolean => ipv4(ip) !== undefined || ipv6Groups(ip) !== undefined;

/**
 * The address a visitor's rate limits are keyed by: an IPv4 address itself, an IPv6 address cut to
 * its first `prefix` bits (`2001:db8:1:2::/64`), since one subscriber gets a whole /64 and may change
 * addresses inside it at will.
 */
export function limitAddress(ip: string, prefix: number): string {
  const groups = ipv6Groups(ip);
  if (groups === undefined || prefix >= 128) return ip;
  const bits = groups.map((group, i) => {
    const keep = Math.max(0, Math.min(16, prefix - i * 16));
    return keep === 0 ? 0 : group & ((0xffff << (16 - keep)) & 0xffff);
  });
  return `${bits.map((group) => group.toString(16)).join(':')}/${prefix}`;
}

/** How much of the visitor's address a site lets go to the platform as `source_ip` (`RELAY_SITES` `source_ip`). */
export type SourceIp = 'full' | 'truncated' | 'none';

/**
 * The visitor's address as its site lets it go to the platform: whole, truncated (IPv4 to its
 * /24, `203.0.113.0`; IPv6 to its /48, `2001:db8:1::`), or not at all. Anything that is not an
 * address goes nowhere.
 */
export function shownAddress(ip: string | undefined, mode: SourceIp): string | undefined {
  if (ip === undefined || mode === 'none') return undefined;
  if (mode === 'full') return ip;
  const groups = ipv6Groups(ip);
  if (groups)
    return `${groups
      .slice(0, 3)
      .map((group) => group.toString(16))
      .join(':')}::`;
  return ipv4(ip) === undefined ? undefined : ip.replace(/\.\d+$/, '.0');
}

/** One entry of a trusted list, read: an address, or an IPv4 range (its masked address and mask). */
type TrustedEntry = { address: string } | { range: number; mask: number };
const trustedEntries = new WeakMap<readonly string[], TrustedEntry[]>();

/** `trusted` read once per list (every request through a proxy asks about its hops). */
function entriesOf(trusted: readonly string[]): TrustedEntry[] {
  let entries = trustedEntries.get(trusted);
  if (entries === undefined) {
    entries = [];
    for (const entry of trusted) {
      const [range, bits] = entry.split('/');
      if (bits === undefined) {
        entries.push({ address: normaliseIp(range!) });
        continue;
      }
      const r = ipv4(range!);
      const n = Number(bits);
      if (r === undefined || n < 0 || n > 32) continue;
      const mask = n === 0 ? 0 : (0xffffffff << (32 - n)) >>> 0;
      entries.push({ range: (r & mask) >>> 0, mask });
    }
    trustedEntries.set(trusted, entries);
  }
  return entries;
}

/** True when `ip` is one of `trusted` (addresses, or IPv4 CIDR ranges like `10.0.0.0/8`). */
export function isTrusted(ip: string, trusted: readonly string[]): boolean {
  const address = normaliseIp(ip);
  let a: number | undefined | null = null;
  for (const entry of entriesOf(trusted)) {
    if ('address' in entry) {
      if (entry.address === address) return true;
      continue;
    }
    if (a === null) a = ipv4(address);
    if (a !== undefined && (a & entry.mask) >>> 0 === entry.range) return true;
  }
  return false;
}

/** Longer `X-Forwarded-For` values are not looked at (a real chain of proxies is a few hops). */
const MAX_FORWARDED_FOR = 512;

/**
 * The client address behind `socket`, believing `forwardedFor` only from trusted proxies, and only
 * when every hop in it is an IP address: a value that is not is ignored, as if the proxy were
 * untrusted, so nothing but an address ever becomes the visitor's address (or its `source_ip`).
 */
export function resolveClientIp(socket: string | undefined, forwardedFor: string | null | undefined, trusted: readonly string[]): string | undefined {
  if (socket === undefined) return undefined;
  const direct = normaliseIp(socket);
  if (!forwardedFor || forwardedFor.length > MAX_FORWARDED_FOR || !isTrusted(direct, trusted)) return direct;
  const hops = forwardedFor.split(',').map(normaliseIp).filter(Boolean);
  if (!hops.every(isIp)) return direct;
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!isTrusted(hops[i]!, trusted)) return hops[i];
  }
  return hops[0] ?? direct;
}
