/**
 * Relay tokens: the credentials servers use for the proxy (instead of the platform key), the server
 * door (`collect`), the admin calls and `/metrics`.
 * Only SHA-256 hashes are configured and kept. A presented token is hashed synchronously with
 * @noble/hashes (plain JavaScript: workerd and Node alike; Web Crypto's async round trip cost more
 * per proxy call than the rest of the proxy) and compared in constant time. New entries are hashed
 * with Web Crypto (`hashToken`), where being async costs nothing.
 *
 * @example
 * const tokens = parseTokens(env.RELAY_TOKENS);
 * const verify = createTokenVerifier(tokens);
 * const token = verify('rt_…'); // the matching TokenConfig, or undefined
 * @module
 */
import { ENDPOINTS, type EndpointId, type Scope } from '../../api/index.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { toBase64url, toHex } from './encoding.js';
import { isRecord } from '../../api/objects.js';

/**
 * A token's scope: the endpoint table's `read` / `write` / `delete`, `admin` for all of them,
 * `metrics` for `GET /metrics` only, or `collect` for the server door (`POST /server/collect`) only.
 */
export type TokenScope = Scope | 'admin' | 'metrics' | 'collect';
export const TOKEN_SCOPES: readonly TokenScope[] = ['read', 'write', 'delete', 'admin', 'metrics', 'collect'];

/** One entry of `RELAY_TOKENS`. */
export interface TokenConfig {
  /** who holds the token; written to the audit log */
  name: string;
  /** lower-case hex SHA-256 of the token */
  sha256: string;
  scopes: TokenScope[];
  /** when present, the token may call only these endpoints (IDs such as `person/get`) */
  endpoints?: EndpointId[];
}

/** A bad `RELAY_TOKENS` value or token option; the message names the entry and what to fix. */
export class TokenConfigError extends TypeError {
  override name = 'TokenConfigError' as const;
}

const HEX64 = /^[0-9a-f]{64}$/;
const problem = (where: string, what: string): TokenConfigError =>
  new TokenConfigError(`${where}: ${what}. Expected {"name","sha256","scopes":[…],"endpoints"?:[…]}; \`cdp-edge token create\` prints a valid entry.`);

/** Checks one token entry; `where` names it in errors (e.g. `RELAY_TOKENS[2]`). */
export function checkToken(entry: unknown, where: string): TokenConfig {
  if (!isRecord(entry)) throw problem(where, 'is not an object');
  const { name, sha256, scopes, endpoints } = entry;
  if (typeof name !== 'string' || name.trim() === '') throw problem(where, 'name must be a non-empty string');
  const label = `${where} (${JSON.stringify(name)})`;
  if (typeof sha256 !== 'string' || !HEX64.test(sha256.toLowerCase())) {
    throw problem(label, 'sha256 must be the 64 hex digits of the SHA-256 of the token (never the token itself)');
  }
  if (!Array.isArray(scopes) || scopes.length === 0) throw problem(label, `scopes must be a non-empty array of ${TOKEN_SCOPES.join(', ')}`);
  const unknown = scopes.find((scope) => !TOKEN_SCOPES.includes(scope as TokenScope));
  if (unknown !== undefined) throw problem(label, `unknown scope ${JSON.stringify(unknown)}; use ${TOKEN_SCOPES.join(', ')}`);
  const token: TokenConfig = { name, sha256: sha256.toLowerCase(), scopes: [...new Set(scopes as TokenScope[])] };
  if (endpoints === undefined) return token;
  if (!Array.isArray(endpoints)) throw problem(label, 'endpoints must be an array of endpoint IDs such as "person/get"');
  token.endpoints = endpoints.map((id: unknown) => {
    const bare = typeof id === 'string' ? id.replace(/^\/v1\//, '') : id;
    if (typeof bare !== 'string' || !Object.hasOwn(ENDPOINTS, bare))
      throw problem(label, `unknown endpoint ${JSON.stringify(id)} in endpoints; use IDs such as "person/get"`);
    return bare as EndpointId;
  });
  return token;
}

/** Checks a list of token entries: each entry, and that names and hashes are unique. */
export function checkTokens(entries: readonly unknown[], where = 'tokens'): TokenConfig[] {
  const tokens = entries.map((entry, index) => checkToken(entry, `${where}[${index}]`));
  const names = new Map<string, number>();
  const hashes = new Map<string, number>();
  tokens.forEach((token, index) => {
    const sameName = names.get(token.name);
    if (sameName !== undefined)
      throw problem(`${where}[${index}]`, `name ${JSON.stringify(token.name)} is already used by ${where}[${sameName}]; names must be unique`);
    const sameHash = hashes.get(token.sha256);
    if (sameHash !== undefined) throw problem(`${where}[${index}]`, `sha256 is the same as ${where}[${sameHash}]'s; give each holder its own token`);
    names.set(token.name, index);
    hashes.set(token.sha256, index);
  });
  return tokens;
}

/**
 * Parses `RELAY_TOKENS` (a JSON array of `{name, sha256, scopes, endpoints?}`). Empty or
 * missing means no tokens (every proxy call is then 401). Throws {@link TokenConfigError}
 * naming `RELAY_TOKENS` and the bad entry.
 *
 * @example
 * parseTokens('[{"name":"crm-sync","sha256":"9f86…","scopes":["read","write"]}]')
 */
export function parseTokens(json: string | undefined): TokenConfig[] {
  if (json === undefined || json.trim() === '') return [];
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (cause) {
    throw new TokenConfigError(`RELAY_TOKENS is not valid JSON (${(cause as Error).message}); expected a JSON array of {"name","sha256","scopes"}`, { cause });
  }
  if (!Array.isArray(value)) throw new TokenConfigError('RELAY_TOKENS must be a JSON array of {"name","sha256","scopes"} entries');
  return checkTokens(value, 'RELAY_TOKENS');
}

async function digest(token: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token)));
}

/** The lower-case hex SHA-256 of `token`: what goes into `RELAY_TOKENS`. */
export async function hashToken(token: string): Promise<string> {
  return toHex(await digest(token));
}

/** A new random token (256 bits, base64url, prefixed `rt_` so it is recognisable in leaks). */
export function generateToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `rt_${toBase64url(bytes)}`;
}

/**
 * Makes a token and its `RELAY_TOKENS` entry. The token is shown once; only the entry is stored.
 *
 * @example
 * const { token, entry } = await createToken({ name: 'crm-sync', scopes: ['read', 'write'] });
 */
export async function createToken(options: {
  name: string;
  scopes: readonly string[];
  endpoints?: readonly string[];
}): Promise<{ token: string; entry: TokenConfig }> {
  const token = generateToken();
  const raw: Record<string, unknown> = { name: options.name, sha256: await hashToken(token), scopes: [...options.scopes] };
  if (options.endpoints !== undefined) raw['endpoints'] = [...options.endpoints];
  return { token, entry: checkToken(raw, 'token') };
}

const fromHex = (value: string): Uint8Array => Uint8Array.from(value.match(/../g) ?? [], (pair) => parseInt(pair, 16));

/**
 * A function that finds the configured token matching a presented one. Every configured
 * hash is compared in full (no early exit), so timing tells nothing about near misses.
 * Hashing is synchronous (@noble/hashes): Web Crypto's async round trip per call cost more than the rest of the proxy.
 */
export function createTokenVerifier(tokens: readonly TokenConfig[]): (presented: string) => TokenConfig | undefined {
  const hashes = tokens.map((token) => ({ token, bytes: fromHex(token.sha256) }));
  const encoder = new TextEncoder();
  return (presented) => {
    const actual = sha256(encoder.encode(presented));
    let found: TokenConfig | undefined;
    for (const { token, bytes } of hashes) {
      let diff = 0;
      for (let i = 0; i < bytes.length; i++) diff |= (bytes[i] ?? 0) ^ (actual[i] ?? 0);
      if (diff === 0 && found === undefined) found = token;
    }
    return found;
  };
}

/** Whether `token` may call endpoint `id` (its scope, `admin`, and its optional endpoint list). */
export function tokenAllows(token: TokenConfig, id: EndpointId): boolean {
  const scope = ENDPOINTS[id].scope;
  const scoped = token.scopes.includes('admin') || token.scopes.includes(scope);
  return scoped && (token.endpoints === undefined || token.endpoints.includes(id));
}
