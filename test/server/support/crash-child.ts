/**
 * A server process that tracks three items with a SQLite spool while its relay is down, says
 * `stored` once they are in the spool (its first failed try: a batch is sent only once spooled),
 * then waits to be killed. Usage: crash-child.ts <relay> <token> <spool file> <email>
 */
import { createServerTracker } from '../../../src/server/index.js';
import { sqliteSpool } from '../../../src/server/spool.js';

const [relay, token, file, email] = process.argv.slice(2) as [string, string, string, string];
let said = false;
const cdp = createServerTracker({
  relay,
  token,
  spool: sqliteSpool(file),
  maxBackoffMs: 200,
  onError: () => {
    if (said) return;
    said = true;
    console.log('stored');
  },
});
for (const n of [1, 2, 3]) void cdp.track({ id: `crash-${email}-${n}`, activity_id: 'act:cm:viewed', person: { 'str::email': email } });
// Alive until killed.
setInterval(() => {}, 60_000);
