/**
 * Cookiebot: follows `Cookiebot.consent` on the events Cookiebot fires on the window
 * (`CookiebotOnConsentReady`, `CookiebotOnAccept`, `CookiebotOnDecline`).
 *
 * The site names the category that allows its tracking (default `statistics`). Given:
 * `granted`. Not given once the visitor answered (`Cookiebot.hasResponse`): `denied`.
 * @module
 */
import { type AdapterOptions, teller, type Unfollow } from './follow.js';

export interface CookiebotOptions extends AdapterOptions {
  /** The Cookiebot category to follow. @default 'statistics' */
  category?: 'preferences' | 'statistics' | 'marketing' | undefined;
}

interface CookiebotPage {
  Cookiebot?: { consent?: Record<string, boolean>; hasResponse?: boolean };
}

const EVENTS = ['CookiebotOnConsentReady', 'CookiebotOnAccept', 'CookiebotOnDecline'];

/** Follows Cookiebot on the page; returns a function that stops. */
export function followCookiebot(options: CookiebotOptions = {}): Unfollow {
  const tell = teller(options.target);
  const category = options.category ?? 'statistics';
  const read = () => {
    const cookiebot = (globalThis as CookiebotPage).Cookiebot;
    if (cookiebot?.consent?.[category]) tell('granted');
    else if (cookiebot?.hasResponse) tell('denied');
  };
  for (const event of EVENTS) addEventListener(event, read);
  read();
  return () => {
    for (const event of EVENTS) removeEventListener(event, read);
  };
}
