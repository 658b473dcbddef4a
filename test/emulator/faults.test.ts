// Faults that strike after the call was applied: the emulator records the activities, then answers
// 504, drops the connection, or never answers. What a caller that retries blindly does to the
// platform's data is what these faults exist to show.
import { beforeEach, describe, expect, it } from 'vitest';
import { createEmulator } from '../../src/emulator/index.js';
import { KEY, useEmulator } from './helpers.js';

const h = useEmulator();
beforeEach(async () => {
  h.running.emulator.setFaults({});
  await h.client.definitions.createActivity({ name: 'Viewed', icon_id: 'eye-illustration-icon' });
});

const activity = (email: string) => ({ activities: [{ activity_id: 'act:cm:viewed', fields: { 'str::email': email } }] });
const create = (email: string, signal?: AbortSignal) =>
  fetch(`${h.running.url}/v1/activities/create`, {
    method: 'POST',
    headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify(activity(email)),
    ...(signal ? { signal } : {}),
  });
/** How many events the emulator recorded for `email`. */
const recorded = (email: string) =>
  [...h.running.emulator.state.people.values()].filter((person) => person.fields['str::email'] === email).reduce((n, person) => n + person.events.length, 0);

describe('faults after the call was applied', () => {
  it('"applied": the activity is recorded, then the answer is the 504 error body; a blind resend records it twice', async () => {
    h.running.emulator.setFaults({ 'activities/create': { status: 504, applied: true } });
    const answer = await create('applied@example.com');
    expect(answer.status).toBe(504);
    expect(await answer.json()).toMatchObject({ code: 504, error: expect.stringContaining('activities/create') });
    expect(recorded('applied@example.com')).toBe(1);
    await create('applied@example.com');
    expect(recorded('applied@example.com')).toBe(2);
  });

  it('without "applied" the same 504 leaves the state as it was', async () => {
    h.running.emulator.setFaults({ 'activities/create': { status: 504 } });
    expect((await create('before@example.com')).status).toBe(504);
    expect(recorded('before@example.com')).toBe(0);
  });

  it('"drop": "close" records the activity and ends the connection without an answer', async () => {
    h.running.emulator.setFaults({ 'activities/create': { drop: 'close', applied: true } });
    await expect(create('closed@example.com')).rejects.toThrow();
    expect(recorded('closed@example.com')).toBe(1);
  });

  it('"drop": "hang" records the activity and never answers: the caller times out', async () => {
    h.running.emulator.setFaults({ 'activities/create': { drop: 'hang', applied: true } });
    const started = Date.now();
    await expect(create('hung@example.com', AbortSignal.timeout(300))).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(recorded('hung@example.com')).toBe(1);
  });

  it('a body the endpoint refuses is not applied, whatever the fault says', async () => {
    h.running.emulator.setFaults({ 'activities/create': { status: 504, applied: true } });
    const answer = await fetch(`${h.running.url}/v1/activities/create`, {
      method: 'POST',
      headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json' },
      body: '{"activities": 3}',
    });
    expect(answer.status).toBe(400);
  });

  it('refuses fault tables that would not work, naming the entry', () => {
    expect(() => createEmulator({ faults: { 'activities/create': { drop: 'sometimes' as 'close' } } })).toThrow('faults["activities/create"].drop');
    expect(() => createEmulator({ faults: { '*': { status: 504, applied: 'yes' as unknown as boolean } } })).toThrow('faults["*"].applied');
    expect(() => createEmulator({ faults: { '*': {} } })).toThrow('faults["*"].status');
    expect(() => createEmulator({ faults: { '*': { drop: 'close' } } })).not.toThrow();
  });
});

describe('onFault', () => {
  it('is told of each call a fault strikes, with its body and whether it was applied, and of no other', async () => {
    const struck: { endpoint: string; body: string; applied: boolean }[] = [];
    const emulator = createEmulator({ key: KEY, onFault: (call) => struck.push(call) });
    const call = (path: string, body: unknown) =>
      emulator.fetch(
        new Request(`http://emulator/v1/${path}`, {
          method: 'POST',
          headers: { 'X-Api-Key': KEY, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );
    expect((await call('definitions/activity/create', { name: 'Viewed', icon_id: 'eye-illustration-icon' })).status).toBe(200);
    expect((await call('activities/create', activity('untouched@example.com'))).status).toBe(200);
    emulator.setFaults({ 'activities/create': { status: 504, applied: true }, 'person/merge': { status: 500 } });
    expect((await call('activities/create', activity('struck@example.com'))).status).toBe(504);
    expect((await call('person/merge', { people: [{ fields: { 'str::email': 'merged@example.com' } }], merge_by: ['str::email'] })).status).toBe(500);
    // A body the endpoint refuses fails for itself, not by the fault: not told.
    expect((await call('activities/create', { activities: [{ activity_id: 'act:cm:unknown', fields: { 'str::email': 'x@example.com' } }] })).status).toBe(400);
    expect(struck.map(({ endpoint, applied }) => ({ endpoint, applied }))).toEqual([
      { endpoint: 'activities/create', applied: true },
      { endpoint: 'person/merge', applied: false },
    ]);
    expect(JSON.parse(struck[0]!.body)).toEqual(activity('struck@example.com'));
  });
});
