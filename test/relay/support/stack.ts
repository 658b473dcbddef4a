/**
 * The upstream every relay test talks to: the test upstream (faults, recording) in front of
 * the real emulator (business plan, so address lookups work), seeded with the activity
 * definitions the suites send. `RELAY_TEST_UPSTREAM=fake` swaps the emulator for the
 * stand-in in upstream.ts, to tell a relay bug from an emulator gap.
 */
import { startEmulator } from '../../../src/emulator/index.js';
import { startTestUpstream, type TestUpstream } from './upstream.js';

export const UPSTREAM_KEY = 'test-platform-key-7f3a9c';

/** Activities the suites send: name → attributes (text attributes become `str:cm:<name>`). */
export const ACTIVITIES: Record<string, string[]> = { 'signed-up': ['plan'], viewed: [], x: [] };

export interface UpstreamStack extends TestUpstream {
  /** true when the real emulator answers behind the test upstream */
  emulator: boolean;
}

async function seed(url: string): Promise<void> {
  for (const [name, attributes] of Object.entries(ACTIVITIES)) {
    const response = await fetch(`${url}/v1/definitions/activity/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': UPSTREAM_KEY },
      body: JSON.stringify({ name, attributes: attributes.map((attribute) => ({ name: attribute, display_type: 'text' })) }),
    });
    if (!response.ok) throw new Error(`seeding activity ${name}: ${response.status} ${await response.text()}`);
  }
}

export async function startUpstreamStack(): Promise<UpstreamStack> {
  const emulator = process.env['RELAY_TEST_UPSTREAM'] === 'fake' ? undefined : await startEmulator({ port: 0, key: UPSTREAM_KEY, plan: 'business' });
  if (emulator) await seed(emulator.url);
  const upstream = await startTestUpstream({ key: UPSTREAM_KEY, ...(emulator ? { emulatorUrl: emulator.url } : {}) });
  return {
    url: upstream.url,
    emulator: emulator !== undefined,
    close: async () => {
      await upstream.close();
      await emulator?.close();
    },
  };
}
