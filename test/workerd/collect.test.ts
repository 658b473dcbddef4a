// The /collect conformance suite inside workerd: the Worker entry, its Durable Object
// (SQLite) for dedupe, rate limits and the lookup counter, real HTTP to the test upstream.
import { relaySuite } from '../relay/suite/index.js';
import { workerdTarget } from './target.js';

const target = workerdTarget();
relaySuite(() => target);
