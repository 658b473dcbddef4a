// The outbox and pacer conformance suite (test/relay/suite/outbox-suite.ts), the one the Node
// stores run, against the Workers outbox: a RelayOutbox Durable Object with SQLite storage,
// called over RPC as the Worker calls it. Each case gets an object of its own.
import { env, runInDurableObject } from 'cloudflare:test';
import type { Outbox, Pacer } from '../../src/relay/state/outbox.js';
import type { RelayOutbox } from '../../src/relay/workers/outbox-object.js';
import { outboxSuite } from '../relay/suite/outbox-suite.js';

type Stub = { [K in keyof RelayOutbox]: RelayOutbox[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/** The object named `name`, as an Outbox and a pacer: a new stub per call, as a Worker makes them. */
function connect(name: string) {
  const namespace = env['RELAY_OUTBOX'];
  const stub = (): Stub => namespace.get(namespace.idFromName(name));
  const outbox: Outbox = {
    accept: (items, now, windowMs, limits) => stub().accept([...items], now, windowMs, limits),
    lease: (owner, max, now, leaseMs) => stub().lease(owner, max, now, leaseMs),
    sending: (owner, seqs, now) => stub().sending(owner, [...seqs], now),
    settle: (owner, settlement, now) => stub().settle(owner, settlement, now),
    lead: (owner, now, ttlMs) => stub().lead(owner, now, ttlMs),
    deadLetters: (options) => stub().deadLetters(options),
    retryDead: (seqs, now) => stub().retryDead(seqs && [...seqs], now),
    dropDead: (seqs) => stub().dropDead(seqs && [...seqs]),
    stats: () => stub().stats(),
    erase: (person, site, now) => stub().erase(person, site, now),
    suppress: (rows, until, now) => stub().suppress([...rows], until, now),
    suppressed: (now) => stub().suppressed(now),
  };
  const pacer = (rate: number, catchUpMs?: number): Pacer => ({
    take: (now, priority) => stub().take(rate, now, priority, catchUpMs),
    hold: (until, now) => stub().hold(rate, until, now),
    leave: (now, inMs, again) => stub().leave(rate, now, inMs, again),
  });
  /** The rows the object's SQL read while `run` ran (its own count: Durable Objects bill rows read). */
  const reads = async (run: () => Promise<unknown>) => {
    const before = (await stub().usage()).rowsRead;
    await run();
    return (await stub().usage()).rowsRead - before;
  };
  return { outbox, pacer, reads, close: async () => {}, stub };
}

const names = new WeakMap<object, string>();

outboxSuite('Durable Object', {
  async open() {
    const name = `suite-${crypto.randomUUID()}`;
    const handle = { ...connect(name), another: async () => connect(name) };
    names.set(handle, name);
    return handle;
  },
  async held(handle) {
    const namespace = env['RELAY_OUTBOX'];
    return runInDurableObject(namespace.get(namespace.idFromName(names.get(handle)!)), (_, state) =>
      Number([...state.storage.sql.exec('SELECT count(*) FROM outbox_seen').raw()][0]![0]),
    );
  },
});
