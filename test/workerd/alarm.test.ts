// An outbox object's safety alarm: set when a round starts, it fires should the round outlast its
// turn (stuck on a call) or the isolate die in it. When it fires while the round is still marked
// running, it arms itself again: otherwise that object would not wake again until its isolate died.
import { env, runInDurableObject } from 'cloudflare:test';
import { expect, it } from 'vitest';

it('arms the safety alarm again when it fires while a round is still marked running', async () => {
  const namespace = env['RELAY_OUTBOX'] as { idFromName(name: string): unknown; get(id: unknown): unknown };
  const stub = namespace.get(namespace.idFromName(`alarm-${crypto.randomUUID()}`));
  const armed = await runInDurableObject(stub, async (instance, state) => {
    const object = instance as { delivering: boolean; alarm(): Promise<void> };
    // A round stuck on a call: the alarm that fires now finds it still running.
    object.delivering = true;
    await state.storage.deleteAlarm();
    await object.alarm();
    const at = await state.storage.getAlarm();
    object.delivering = false;
    await state.storage.deleteAlarm();
    return at;
  });
  expect(armed).not.toBeNull();
  // For a turn and a minute from now, as when a round starts.
  expect(armed! - Date.now()).toBeGreaterThan(60_000);
});
