/**
 * OneTrust: follows the active consent groups (`OnetrustActiveGroups`, and the
 * `OneTrustGroupsUpdated` event the banner fires on load and on every change).
 *
 * The site names the category that allows its tracking (default `C0002`, "Performance
 * Cookies"). Active: `granted`. Not active once the visitor closed the banner
 * (`OneTrust.IsAlertBoxClosed()`): `denied`. Otherwise the visitor has not chosen.
 * @module
 */
import { type AdapterOptions, teller, type Unfollow } from './follow.js';

export interface OneTrustOptions extends AdapterOptions {
  /** The OneTrust category id to follow. @default 'C0002' */
  category?: string | undefined;
}

interface OneTrustPage {
  OnetrustActiveGroups?: string;
  OneTrust?: { IsAlertBoxClosed?: () => boolean };
}

/** Follows OneTrust on the page; returns a function that stops. */
export function followOneTrust(options: OneTrustOptions = {}): Unfollow {
  const tell = teller(options.target);
  const category = options.category ?? 'C0002';
  const page = globalThis as OneTrustPage;
  const read = (groups: unknown) => {
    const active = Array.isArray(groups) ? groups : String(page.OnetrustActiveGroups ?? '').split(',');
    if (active.includes(category)) tell('granted');
    else if (page.OneTrust?.IsAlertBoxClosed?.()) tell('denied');
  };
  const updated = (event: Event) => read((event as CustomEvent).detail);
  addEventListener('OneTrustGroupsUpdated', updated);
  if (page.OnetrustActiveGroups !== undefined) read(undefined);
  return () => removeEventListener('OneTrustGroupsUpdated', updated);
}
