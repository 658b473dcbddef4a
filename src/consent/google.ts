/**
 * Google Consent Mode v2: follows `gtag('consent', 'default' | 'update', {…})` as it reaches
 * `dataLayer` (the calls made before the adapter started, then each new one).
 *
 * Storing needs `analytics_storage`; sending needs `analytics_storage` and `ad_user_data` (the
 * person's data leaves the page). A `default` that denies storing is no choice: the state stays
 * `pending` until an `update` (which consent platforms send on load for returning visitors);
 * a `default` that grants is the site's rule (no consent needed there) and counts.
 * @module
 */
import { type AdapterOptions, stateOf, teller, type Unfollow } from './follow.js';

export interface GoogleOptions extends AdapterOptions {
  /** Consent types needed to store. @default ['analytics_storage'] */
  storage?: string[] | undefined;
  /** Consent types needed to send. @default ['analytics_storage', 'ad_user_data'] */
  sending?: string[] | undefined;
  /** The data layer's global name. @default 'dataLayer' */
  dataLayer?: string | undefined;
}

/** Follows the page's Consent Mode state; returns a function that stops. */
export function followGoogle(options: GoogleOptions = {}): Unfollow {
  const tell = teller(options.target);
  const page = globalThis as unknown as Record<string, unknown[] | undefined>;
  const name = options.dataLayer ?? 'dataLayer';
  page[name] ??= [];
  const layer = page[name];
  const storage = options.storage ?? ['analytics_storage'];
  const sending = options.sending ?? ['analytics_storage', 'ad_user_data'];
  const types: Record<string, unknown> = {};
  let updated = false;
  const read = (entry: unknown) => {
    // gtag() pushes its `arguments`: ['consent', 'default' | 'update', { type: 'granted' | 'denied' }].
    const args = entry as ArrayLike<unknown> | null;
    if (args?.[0] !== 'consent' || (args[1] !== 'default' && args[1] !== 'update') || typeof args[2] !== 'object' || !args[2]) return;
    Object.assign(types, args[2]);
    updated ||= args[1] === 'update';
    const granted = (list: string[]) => list.every((type) => types[type] === 'granted');
    tell(stateOf(granted(storage) ? true : updated ? false : undefined, granted(sending)));
  };
  for (const entry of layer) read(entry);
  const push = layer.push;
  layer.push = function (this: unknown[], ...entries: unknown[]) {
    const length = push.apply(this, entries);
    for (const entry of entries) read(entry);
    return length;
  };
  return () => {
    layer.push = push;
  };
}
