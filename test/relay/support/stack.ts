/**
 * The upstream every relay test talks to: the test upstream (faults, recording) in front of
 * the real emulator when `src/emulator` provides `startEmulator`, else its own stand-in.
 */
import { startTestUpstream, type TestUpstream } from './upstream.js';

export const UPSTREAM_KEY = 'test-platform-key-7f3a9c';

export interface UpstreamStack extends TestUpstream {
  /** true when the real emulator answers behind the test upstream */
  emulator: boolean;
}

export async function startUpstreamStack(): Promise<UpstreamStack> {
  let emulator: { url: string; close(): Promise<void> } | undefined;
  // RELAY_TEST_UPSTREAM=fake runs the relay suites against the stand-in alone (to tell relay bugs from emulator gaps).
  if (process.env['RELAY_TEST_UPSTREAM'] !== 'fake') try {
    const module = (await import('../../../src/emulator/index.js')) as { startEmulator?: (options: { port: number; key: string }) => Promise<{ url: string; close(): Promise<void> }> };
    if (module.startEmulator) emulator = await module.startEmulator({ port: 0, key: UPSTREAM_KEY });
  } catch {
    emulator = undefined;
  }
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
