/**
 * What must never be in the relay's logs: keys, tokens, identity secrets, user hashes, email
 * addresses. `leaksIn` finds the given secrets and anything shaped like an email address, a
 * long hex string (a hash or an HMAC) or a relay token.
 */
const SHAPES: [string, RegExp][] = [
  ['an email address', /[^\s"'<>@,;:()[\]]+@[^\s"'<>@,;:()[\]]+\.[A-Za-z]{2,}/],
  ['a hash (32+ hex digits)', /\b[0-9a-fA-F]{32,}\b/],
  ['a relay token', /\brt_[A-Za-z0-9_-]{16,}/],
];

/** Each leak in `text` as "what: the line it is on". */
export function leaksIn(text: string, secrets: readonly string[]): string[] {
  const found: string[] = [];
  for (const line of text.split('\n')) {
    for (const secret of secrets) if (secret && line.includes(secret)) found.push(`a secret (${secret.slice(0, 4)}…): ${line}`);
    for (const [what, shape] of SHAPES) if (shape.test(line)) found.push(`${what}: ${line}`);
  }
  return found;
}
