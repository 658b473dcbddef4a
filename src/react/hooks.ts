/**
 * Hooks that call the tracker from effects, once per change whatever React re-runs: an identify
 * per person, a page view per route.
 * @module
 */
import { useEffect } from 'react';
import type { Fields, IdentifyOptions } from '../browser/types.js';
import type { UserHash } from '../api/collect.js';
import { report, useTracker } from './provider.js';
import { doneWith } from './tracker.js';

/**
 * Identifies the signed-in visitor once per person: `user` is the person's fields
 * (`{ 'str::email': … }`), `userHash` the proof your server made for them (`identityHash`, or
 * `userHashFor` of `cdp-edge/next/server`). Nothing happens again until they change: not on
 * re-renders, strict mode's second effect, or another component identifying the same person.
 * When `user` goes from someone to nobody (signed out), the tracker is `reset()`, so what follows
 * is not theirs. Pass `null` or `undefined` while nobody is signed in.
 *
 * @example
 * useIdentify(session ? { 'str::email': session.email } : null, session?.userHash);
 */
export function useIdentify(user: Fields | null | undefined, userHash?: UserHash | null, options?: Omit<IdentifyOptions, 'user_hash'>): void {
  const tracker = useTracker();
  // One string per person, hash and options: the effect runs when one of them changes, not on every new object.
  const person = user ? JSON.stringify([user, userHash ?? null, options ?? null]) : undefined;
  useEffect(() => {
    const done = doneWith(tracker);
    if (person === undefined) {
      if (done.person === undefined) return;
      done.person = undefined;
      tracker.reset().catch(report('reset'));
      return;
    }
    if (done.person === person) return;
    done.person = person;
    const [fields, hash, rest] = JSON.parse(person) as [Fields, UserHash | null, Omit<IdentifyOptions, 'user_hash'> | null];
    tracker.identify(fields, { ...rest, ...(hash ? { user_hash: hash } : {}) }).catch((error: unknown) => {
      // Refused input: a later render with the same person tries again.
      if (done.person === person) done.person = undefined;
      report('identify')(error);
    });
  }, [tracker, person]);
}

/**
 * Sends a page view whenever `route` changes: pass your router's path (`usePathname()` in Next.js,
 * `useLocation().pathname` in React Router), with the query string if it makes another page.
 * One view per change, whatever React re-runs. Use it or the provider's `spa`, not both.
 *
 * @example
 * usePageViews(usePathname());
 */
export function usePageViews(route: string | null | undefined): void {
  const tracker = useTracker();
  useEffect(() => {
    const done = doneWith(tracker);
    if (route == null || done.route === route) return;
    done.route = route;
    tracker.page().catch(report('page view'));
  }, [tracker, route]);
}
