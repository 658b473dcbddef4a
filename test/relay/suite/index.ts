/** The /collect conformance suite: registered once per runtime (test/relay on Node, test/workerd in workerd). */
import { describe, it } from 'vitest';
import { capacityCases } from './capacity-cases.js';
import { enrichmentCases } from './enrichment-cases.js';
import { identityCases } from './identity-cases.js';
import { protocolCases } from './protocol-cases.js';
import { serverDoorCases } from './server-door-cases.js';
import { expectKeyNeverSeen, type RelayTarget } from './target.js';
import { upstreamCases } from './upstream-cases.js';

export function relaySuite(target: () => RelayTarget): void {
  protocolCases(target);
  identityCases(target);
  enrichmentCases(target);
  upstreamCases(target);
  capacityCases(target);
  serverDoorCases(target);
  describe('the platform key', () => {
    it('never appeared in any response body or header above', () => expectKeyNeverSeen());
  });
}
