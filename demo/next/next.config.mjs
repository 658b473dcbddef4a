// The relay's /collect and /cdp.js under this site's origin, at /t/collect and /t/cdp.js.
import { withCdpEdge } from 'cdp-edge/next';

export default withCdpEdge({}, { relay: process.env.CDP_EDGE_RELAY ?? 'http://127.0.0.1:8787', path: '/t' });
