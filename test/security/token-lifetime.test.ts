// Attack: a stolen identity token kept alive. Every answer to a request carrying a valid token
// carries a token again; before, each had a new expiry an hour ahead, so a token refreshed at
// least once an hour never expired. Now a token ends an hour after the `user_hash` that proved
// its person, however often it is refreshed (docs/security.md).
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/relay/core/clock.js';
import { itemId, ORIGIN, type Stack, startStack } from './support.js';

const SECRET = 'token-lifetime-identity-secret-0123456789';
const SITE = 'pk_tokens';
const LIFETIME_MS = 3600_000;

// The relay's clock, moved forward by the test: an hour passes without waiting for it.
let offset = 0;
const clock: Clock = { now: () => Date.now() + offset, sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    env: {
      RELAY_IDENTITY_SECRET: SECRET,
      RELAY_SITES: JSON.stringify([{ key: SITE, origins: [ORIGIN], verify: 'required' }]),
    },
    relay: { clock },
  });
});
afterAll(() => stack?.close());

/** One browser's request: a track of `email`, proven by `proof` (its user_hash) or by `identity` (its token). */
async function send(email: string, proof: { identity?: string; user_hash?: string }) {
  const response = await fetch(`${stack.relay.url}/collect`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: ORIGIN },
    body: JSON.stringify({
      key: SITE,
      ...(proof.identity ? { identity: proof.identity } : {}),
      batch: [
        {
          id: itemId(),
          type: 'track',
          ts: new Date(clock.now()).toISOString(),
          activity_id: 'act:cm:signed-up',
          person: { 'str::email': email },
          ...(proof.user_hash ? { user_hash: proof.user_hash } : {}),
        },
      ],
    }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { results: { status: string; reason?: string }[]; identity?: string };
}

describe('the identity token', () => {
  it('refreshed every 5 minutes still ends an hour after the proof; a new user_hash starts a new hour', async () => {
    const email = 'holder@example.com';
    const proven = await send(email, { user_hash: createHmac('sha256', SECRET).update(`str::email\n${email}`).digest('hex') });
    expect(proven.results[0]?.status).toBe('accepted');
    let token = proven.identity;
    expect(token).toEqual(expect.any(String));

    // Refreshed within the hour: every answer proves the person and hands a token back.
    for (offset = 5 * 60_000; offset < LIFETIME_MS; offset += 5 * 60_000) {
      const answer = await send(email, { identity: token! });
      expect(answer.results[0]?.status, `after ${offset / 60_000} min`).toBe('accepted');
      expect(answer.identity).toEqual(expect.any(String));
      token = answer.identity;
    }
    // Past the hour, the latest token, refreshed 5 minutes ago, proves nothing.
    offset = LIFETIME_MS + 60_000;
    const late = await send(email, { identity: token! });
    expect(late.results[0]).toMatchObject({ status: 'rejected', reason: 'unverified' });
    expect(late.identity).toBeUndefined();

    // The site's server proving the person again starts a new lifetime.
    const again = await send(email, { user_hash: createHmac('sha256', SECRET).update(`str::email\n${email}`).digest('hex') });
    expect(again.results[0]?.status).toBe('accepted');
    expect((await send(email, { identity: again.identity! })).results[0]?.status).toBe('accepted');
  });
});
