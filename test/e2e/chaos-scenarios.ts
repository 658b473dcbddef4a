/**
 * The chaos scenarios: each opens pages of the script-tag snippet, identifies one person, tracks
 * events numbered 0…n-1 while something goes wrong, and counts at the emulator what arrived.
 * `sent` counts events whose track() Promise resolved (stored durably, the snippet's promise);
 * `lost` = sent but neither arrived nor held by the relay (its dead-letter list, reason
 * `ambiguous`), `duplicated` = arrivals beyond the first of an event. Only a scenario whose
 * calls' outcomes the relay cannot know may hold events, and only those: the events the
 * `activities/create` calls a platform fault struck carried (all of them), or events that may have
 * been in a call when the relay was killed; `misheld` counts every other held event and every
 * event held where it must not be, `unlisted` the held events `cdp-edge outbox list` does not show.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FaultSpec } from '../../src/emulator/options.js';
import { activityOf, type ChaosStack } from './chaos-stack.js';
import { flushSnippet } from './snippet-stack.js';

export interface ScenarioResult {
  name: string;
  what: string;
  sent: number;
  arrived: number;
  /** held by the relay in its dead-letter list (their call's outcome unknown, so the platform may have them): never sent twice */
  held: number;
  lost: number;
  duplicated: number;
  /** arrivals of events never confirmed as sent (should be 0) */
  unexpected: number;
  /** held events the scenario does not explain, events it must hold and the relay did not, held events the platform never took that arrived all the same (should be 0) */
  misheld: number;
  /** held events the operator's `cdp-edge outbox list` does not show (should be 0) */
  unlisted: number;
  seconds: number;
  /** seconds from the last send until everything arrived (or the deadline) */
  drain_seconds: number;
  /** what the pages saw of /collect: answers, answers not 200 or carrying `retry` items, requests that failed on the network */
  collect: { answers: number; not_ok: number; failed: number };
  /** platform calls the emulator's fault mode failed during the scenario */
  faults_injected: number;
}

interface Context {
  /** a fresh browser context, closed when the scenario ends */
  newContext(): Promise<BrowserContext>;
  stack: ChaosStack;
  email: string;
  /** events this scenario sends */
  n: number;
  /** record events confirmed stored */
  sent: Set<string>;
  collect: ScenarioResult['collect'];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const CHUNK = 20;

type Cdp = {
  track(a: string, attrs: Record<string, string>): Promise<void>;
  identify(f: Record<string, string>): Promise<void>;
  flush(): Promise<void>;
  consent(c: string): Promise<void>;
  loaded?: boolean;
};

async function open(context: BrowserContext, ctx: Context, init: Record<string, unknown> = {}): Promise<Page> {
  const { stack } = ctx;
  const page = await context.newPage();
  // The disturbance really happened: count what the page saw of /collect.
  page.on('response', (response) => {
    if (!response.url().endsWith('/collect') || response.request().method() !== 'POST') return;
    ctx.collect.answers++;
    if (response.status() !== 200) return void ctx.collect.not_ok++;
    response.text().then(
      (text) => text.includes('"retry"') && ctx.collect.not_ok++,
      () => {},
    );
  });
  page.on('requestfailed', (request) => request.url().endsWith('/collect') && ctx.collect.failed++);
  await page.goto(stack.pageUrl({ flushInterval: 100, ...init }));
  await page.waitForFunction(() => (window as unknown as { cdp?: Cdp }).cdp?.loaded === true, undefined, { timeout: 15_000 });
  return page;
}

/** Identifies (when `email`) and tracks events `from…to-1`; records each one whose Promise resolved. */
async function track(page: Page, ctx: Context, from: number, to: number, email?: string): Promise<void> {
  const events = Array.from({ length: Math.max(0, to - from) }, (_, i) => ({ n: String(from + i), activity: activityOf(from + i) }));
  const stored = await page.evaluate(
    async ({ email, events }) => {
      const cdp = (window as unknown as { cdp: Cdp }).cdp;
      if (email) await cdp.identify({ 'str::email': email });
      const settled = await Promise.allSettled(events.map((e) => cdp.track(e.activity, { 'str:cm:n': e.n })));
      return events.filter((_, i) => settled[i]!.status === 'fulfilled').map((e) => e.n);
    },
    { email, events },
  );
  for (const n of stored) ctx.sent.add(n);
}

/** Tracks `from…to-1` in chunks, calling `between` after each chunk. */
async function inChunks(from: number, to: number, each: (start: number, end: number, index: number) => Promise<void>): Promise<void> {
  for (let start = from, index = 0; start < to; start += CHUNK, index++) await each(start, Math.min(to, start + CHUNK), index);
}

export interface Scenario {
  name: string;
  what: string;
  /** where the disturbance must show, so a run proves it happened: failed /collect requests in the page, or faults at the platform */
  disturbs?: 'page' | 'platform';
  run(ctx: Context): Promise<void>;
  /** undone once the scenario has drained (faults off, relay up) */
  cleanup?(ctx: Context): Promise<void> | void;
  /**
   * The events the relay may hold as dead letters (`may`), those it must hold (`must`), and those
   * the platform never took (`untaken`: held, they must not arrive) @default none: every event arrives once
   */
  holds?(ctx: Context): { may: ReadonlySet<string>; must: ReadonlySet<string>; untaken: ReadonlySet<string> };
}

/** The events of a scenario whose `activities/create` calls a fault struck: held, every one (the relay cannot know their outcome). */
const struckCalls = (ctx: Context) => {
  const { applied, unapplied } = ctx.stack.faulted(ctx.email);
  const struck = new Set([...applied, ...unapplied]);
  return { may: struck, must: struck, untaken: new Set(unapplied) };
};

const faulty = (name: string, what: string, spec: FaultSpec, endpoints?: readonly string[]): Scenario => ({
  disturbs: 'platform',
  name,
  what,
  // A 429 says the call was not applied: sent again, never held.
  ...(spec.status === 429 ? {} : { holds: struckCalls }),
  async run(ctx) {
    const context = await ctx.newContext();
    const page = await open(context, ctx);
    // The first chunk meets a platform failing every call until one call has failed (so even a
    // short run sees the fault, however few calls the relay's deliverer makes), then 20%.
    const before = ctx.stack.faultsInjected;
    ctx.stack.setFaults({ ...spec, rate: 1 }, endpoints);
    await inChunks(0, ctx.n, async (a, b, i) => {
      await track(page, ctx, a, b, i === 0 ? ctx.email : undefined);
      if (i === 0) {
        for (let waited = 0; ctx.stack.faultsInjected === before && waited < 10_000; waited += 100) await sleep(100);
        ctx.stack.setFaults({ ...spec, rate: 0.2 }, endpoints);
      }
      await sleep(50);
    });
  },
  cleanup: (ctx) => ctx.stack.setFaults(undefined),
});

/**
 * Tracks the first third, breaks something, tracks the second third, waits 1.5 s and until a
 * /collect of the page has failed since the break, heals it, tracks the rest.
 */
async function breakInTheMiddle(
  ctx: Context,
  down: (context: BrowserContext) => Promise<void> | void,
  up: (context: BrowserContext) => Promise<void> | void,
): Promise<void> {
  const context = await ctx.newContext();
  const page = await open(context, ctx);
  const third = Math.ceil(ctx.n / 3);
  await inChunks(0, third, (a, b, i) => track(page, ctx, a, b, i === 0 ? ctx.email : undefined));
  const failed = ctx.collect.failed;
  await down(context);
  await inChunks(third, 2 * third, (a, b) => track(page, ctx, a, b));
  // The fault lasts 1.5 s, and until the page's traffic has met it (a /collect failed): a loaded
  // machine may run no flush in 1.5 s. Past 15 s it ends anyway, and the check that a /collect failed says so.
  const since = Date.now();
  while (Date.now() - since < 1500 || (ctx.collect.failed === failed && Date.now() - since < 15_000)) await sleep(100);
  await up(context);
  await inChunks(2 * third, ctx.n, (a, b) => track(page, ctx, a, b));
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'offline',
    disturbs: 'page',
    what: 'the network goes offline in the middle of tracking, for 1.5 s and until a /collect failed',
    run: (ctx) =>
      breakInTheMiddle(
        ctx,
        (context) => context.setOffline(true),
        (context) => context.setOffline(false),
      ),
  },
  {
    name: 'reloads',
    what: `the page reloads after every ${CHUNK} events (0–300 ms after they are stored, flushes in flight)`,
    async run(ctx) {
      const context = await ctx.newContext();
      const page = await open(context, ctx);
      await inChunks(0, ctx.n, async (a, b, i) => {
        await track(page, ctx, a, b, i === 0 ? ctx.email : undefined);
        await sleep((i * 97) % 300);
        await page.reload();
        await page.waitForFunction(() => (window as unknown as { cdp?: Cdp }).cdp?.loaded === true, undefined, { timeout: 15_000 });
      });
    },
  },
  {
    name: 'tab-close',
    what: `a tab tracks ${CHUNK} events, starts a flush and is closed at once; the next tab carries on`,
    async run(ctx) {
      const context = await ctx.newContext();
      await inChunks(0, ctx.n, async (a, b, i) => {
        const page = await open(context, ctx);
        await track(page, ctx, a, b, i === 0 ? ctx.email : undefined);
        await page.evaluate(() => void (window as unknown as { cdp: Cdp }).cdp.flush());
        await page.close({ runBeforeUnload: true });
      });
      await open(context, ctx); // one tab stays to send what the beacons did not
    },
  },
  {
    name: 'three-tabs',
    what: 'three tabs of one site track at once (one flushes at a time)',
    async run(ctx) {
      const context = await ctx.newContext();
      const tabs = [await open(context, ctx), await open(context, ctx), await open(context, ctx)];
      await track(tabs[0]!, ctx, 0, 1, ctx.email);
      const share = Math.ceil((ctx.n - 1) / 3);
      await Promise.all(tabs.map((tab, t) => inChunks(1 + t * share, Math.min(ctx.n, 1 + (t + 1) * share), (a, b) => track(tab, ctx, a, b))));
    },
  },
  {
    name: 'relay-restart',
    disturbs: 'page',
    what: 'the relay process is SIGKILLed mid-traffic and restarted on the same port 1.5 s later, once a /collect failed',
    run: (ctx) =>
      breakInTheMiddle(
        ctx,
        () => ctx.stack.killRelay(),
        () => ctx.stack.startRelay(),
      ),
    cleanup: async (ctx) => {
      await fetch(`${ctx.stack.relayUrl}/healthz`).catch(() => ctx.stack.startRelay());
    },
    // A call in flight when the relay was killed has an unknown outcome: only events of the first
    // third, tracked before the kill, may have been in one.
    holds: (ctx) => ({ may: new Set(Array.from({ length: Math.ceil(ctx.n / 3) }, (_, n) => String(n))), must: new Set(), untaken: new Set() }),
  },
  faulty('upstream-429', 'the platform answers 429 with try-in-seconds to 20% of calls', { status: 429 }),
  faulty('upstream-500', 'the platform answers 500 to 20% of calls', { status: 500 }),
  faulty('upstream-timeout', "the platform stays silent for 2.5 s (past the relay's timeout) on 20% of calls", { status: 504, delayMs: 2500 }),
  // Outcomes a relay cannot tell from failures: activities/create applied, then the answer lost. A
  // relay that sends such a call again duplicates its events; one that holds them counts them held.
  faulty(
    'upstream-applied-504',
    'the platform records the events of 20% of activities/create calls, then answers 504 (the outcome the relay cannot know)',
    { status: 504, applied: true },
    ['activities/create'],
  ),
  faulty(
    'upstream-applied-drop',
    'the platform records the events of 20% of activities/create calls, then drops the connection without an answer',
    { drop: 'close', applied: true },
    ['activities/create'],
  ),
  {
    name: 'consent',
    what: 'consent flips pending ↔ granted every chunk: stored while pending, sent once granted',
    async run(ctx) {
      const context = await ctx.newContext();
      const page = await open(context, ctx, { consent: 'store-only' });
      await inChunks(0, ctx.n, async (a, b, i) => {
        await track(page, ctx, a, b, i === 0 ? ctx.email : undefined);
        await page.evaluate((state) => (window as unknown as { cdp: Cdp }).cdp.consent(state), i % 2 === 0 ? 'granted' : 'store-only');
      });
      await page.evaluate(() => (window as unknown as { cdp: Cdp }).cdp.consent('granted'));
    },
  },
];

/**
 * Resolves once nothing more can reach the platform, so what it holds is final (a late duplicate
 * would have arrived): every open page that runs the snippet has flushed what it still holds (the
 * relay answers a second copy `duplicate`), then the relay's outbox has nothing left to send and
 * no call in flight. Gives up at `until`; the counts then show what is missing.
 */
async function settled(contexts: readonly BrowserContext[], stack: ChaosStack, until: number): Promise<void> {
  const pages = contexts.flatMap((context) => context.pages());
  await Promise.all(pages.map((page) => page.evaluate(flushSnippet).catch(() => {})));
  while (Date.now() < until && (await stack.pending().catch(() => 1)) > 0) await sleep(100);
}

/** Runs one scenario with `n` events and waits (at most `deadlineMs`) for them at the emulator. */
export async function runScenario(browser: Browser, stack: ChaosStack, scenario: Scenario, n: number, deadlineMs: number): Promise<ScenarioResult> {
  const contexts: BrowserContext[] = [];
  const newContext = async () => {
    const context = await browser.newContext();
    contexts.push(context);
    return context;
  };
  const ctx: Context = {
    newContext,
    stack,
    email: `chaos-${scenario.name}-${Date.now()}@example.com`,
    n,
    sent: new Set(),
    collect: { answers: 0, not_ok: 0, failed: 0 },
  };
  const started = Date.now();
  const faultsBefore = stack.faultsInjected;
  let sentAt = started;
  let drainedAt = started;
  try {
    await scenario.run(ctx);
    sentAt = Date.now();
    const until = sentAt + deadlineMs;
    const accounted = async () => new Set([...stack.received(ctx.email), ...(await stack.held(ctx.email))]).size;
    while (Date.now() < until && (await accounted()) < ctx.sent.size) await sleep(100);
    drainedAt = Date.now();
    await scenario.cleanup?.(ctx);
    await settled(contexts, stack, until);
  } finally {
    await scenario.cleanup?.(ctx);
    for (const context of contexts) await context.close().catch(() => {});
  }
  const arrivals = stack.received(ctx.email);
  const unique = new Set(arrivals);
  const heldBack = new Set(await stack.held(ctx.email));
  const lost = [...ctx.sent].filter((n) => !unique.has(n) && !heldBack.has(n)).length;
  const none = new Set<string>();
  const { may, must, untaken } = scenario.holds?.(ctx) ?? { may: none, must: none, untaken: none };
  const misheld = [...heldBack].filter((n) => !may.has(n) || (untaken.has(n) && unique.has(n))).length + [...must].filter((n) => !heldBack.has(n)).length;
  const listed = new Set(await stack.listed(ctx.email));
  return {
    name: scenario.name,
    what: scenario.what,
    sent: ctx.sent.size,
    arrived: [...unique].filter((n) => ctx.sent.has(n)).length,
    // Every held event counts, arrived or not: each waits for a person to check it against the platform.
    held: [...heldBack].filter((n) => ctx.sent.has(n)).length,
    lost,
    duplicated: arrivals.length - unique.size,
    unexpected: [...unique].filter((n) => !ctx.sent.has(n)).length,
    misheld,
    unlisted: [...heldBack].filter((n) => !listed.has(n)).length,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    drain_seconds: Math.round((drainedAt - sentAt) / 100) / 10,
    collect: ctx.collect,
    faults_injected: stack.faultsInjected - faultsBefore,
  };
}
