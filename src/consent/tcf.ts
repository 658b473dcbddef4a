/**
 * IAB TCF v2.2: follows the CMP through `__tcfapi('addEventListener', 2, …)`.
 *
 * Storing needs purpose 1 ("Store and/or access information on a device"); sending needs the
 * site's measurement purposes too (default purpose 9, "Understand audiences through statistics
 * or combinations of data from different sources"), and the site's own vendor id when it gives
 * one. Outside the GDPR (`gdprApplies: false`) the state is `granted`.
 * @module
 */
import { type AdapterOptions, stateOf, teller, type Unfollow, whenDefined } from './follow.js';

export interface TcfOptions extends AdapterOptions {
  /** Purposes that must have consent before anything is sent. @default [9] */
  purposes?: number[] | undefined;
  /** The site's vendor id in the Global Vendor List: its consent is needed to send, too. */
  vendor?: number | undefined;
  /** How long to wait for `__tcfapi` to appear, in ms. @default 10000 */
  waitMs?: number | undefined;
}

/** The part of the TC data an adapter reads (TCF v2.2, "TCData"). */
interface TcData {
  gdprApplies?: boolean;
  eventStatus?: 'tcloaded' | 'cmpuishown' | 'useractioncomplete';
  listenerId?: number;
  purpose?: { consents?: Record<string, boolean> };
  vendor?: { consents?: Record<string, boolean> };
}

type TcfApi = (command: string, version: number, callback: (data: TcData, success: boolean) => void, parameter?: unknown) => void;

/** Follows the TCF CMP of the page; returns a function that stops. */
export function followTcf(options: TcfOptions = {}): Unfollow {
  const tell = teller(options.target);
  const api = () => (globalThis as { __tcfapi?: TcfApi }).__tcfapi;
  let listenerId: number | undefined;
  const listener = (data: TcData, success: boolean) => {
    if (!success || !data) return;
    listenerId = data.listenerId;
    if (data.gdprApplies === false) return tell('granted');
    // `cmpuishown`: the visitor is choosing; the other two carry a choice.
    if (data.eventStatus !== 'tcloaded' && data.eventStatus !== 'useractioncomplete') return;
    const purposes = data.purpose?.consents ?? {};
    const vendorOk = options.vendor === undefined || data.vendor?.consents?.[options.vendor] === true;
    tell(stateOf(purposes[1] === true, vendorOk && (options.purposes ?? [9]).every((purpose) => purposes[purpose] === true)));
  };
  const stopWaiting = whenDefined(api, (tcfapi) => tcfapi('addEventListener', 2, listener), options.waitMs);
  return () => {
    stopWaiting();
    if (listenerId !== undefined) api()?.('removeEventListener', 2, () => {}, listenerId);
  };
}
