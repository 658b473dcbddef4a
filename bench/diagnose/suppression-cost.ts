/**
 * Diagnose: what the suppression list (erasure at the relay, state/suppression.ts) costs
 * `/collect`: CPU per request through the relay's app (no HTTP server, the memory outbox, no
 * deliverer) for batches of 10 and 100 tracks, with nobody suppressed and with one person
 * suppressed (each request's items then have their identifiers hashed, once per person). The best
 * of --rounds rounds of --requests requests each; the load average is printed beside it.
 *
 *   npx tsx bench/diagnose/suppression-cost.ts [--requests 300] [--rounds 5]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { personHash, personOf } from '../../src/relay/state/erase.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '300' }, rounds: { type: 'string', default: '5' } } });
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);
const ORIGIN = 'https://shop.example.com';
const config = parseConfig({
  CDP_API_KEY: 'k',
  CDP_BASE_URL: 'http://127.0.0.1:9',
  RELAY_LOG: 'off',
  RELAY_SITES: JSON.stringify([{ key: 'pk', origins: [ORIGIN], verify: 'off' }]),
});

/** ms of CPU per request of `batch` tracks (each request one person's). */
async function round(suppressed: boolean, batch: number): Promise<number> {
  const outbox = createMemoryOutbox();
  if (suppressed) await outbox.suppress([{ site: '', hash: personHash(personOf('email', 'someone@else.example')) }], Date.now() + 3600_000, Date.now());
  const relay = createRelayHandlers(config, { outbox, deliver: false });
  const bodies = Array.from({ length: REQUESTS }, (_, r) =>
    JSON.stringify({
      key: 'pk',
      batch: Array.from({ length: batch }, () => ({
        id: crypto.randomUUID(),
        type: 'track',
        ts: new Date().toISOString(),
        activity_id: 'act:cm:viewed',
        person: { 'str::email': `v${r}@example.com` },
      })),
    }),
  );
  const start = process.cpuUsage();
  for (const body of bodies) {
    const answer = await relay.app.request('/collect', { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body });
    if (answer.status !== 200) throw new Error(`/collect answered ${answer.status}: ${await answer.text()}`);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / REQUESTS;
}

for (const batch of [10, 100]) {
  const none: number[] = [];
  const one: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    none.push(await round(false, batch));
    one.push(await round(true, batch));
  }
  console.log(
    `${batch} items: ms CPU per /collect, best of ${ROUNDS}: nobody suppressed ${Math.min(...none).toFixed(3)}, one person suppressed ${Math.min(...one).toFixed(3)} (load ${loadavg()[0]!.toFixed(2)})`,
  );
}
