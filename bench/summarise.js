/**
 * One line of figures and the targets of the issues for each bench's results JSON, for the
 * summary of bench/run.js. Each reader is tolerant: a shape it does not know gives a note,
 * never a crash, so one bench changing its JSON cannot hide the others.
 */

const target = (what, value, wanted, met) => ({ what, value, target: wanted, met: typeof value === 'number' ? met : null });

/** Each batch size of a relay-cpu run: its best round and median. */
const cpuRounds = (r) => r.results.map((x) => `${x.items} items ${x.msPerRequest} ms best round, ${x.medianMsPerRequest ?? '?'} ms median`);

const READERS = {
  lease(r) {
    const runs = (results) =>
      results.map((s) => `${s.store} ${s.runs.map((x) => `${x.mix} p50 ${x.p50_ms} ms (max ${x.max_ms}, ${x.leases} leases)`).join(', ')}`).join('; ');
    // One lease of 100 beside a backlog it cannot take (held behind identifies): its work and what it leased, by backlog.
    const growth = (stores = []) =>
      stores.map((s) => `${s.store} (${s.unit}) ${s.runs.map((x) => `${x.backlog}: ${x.work ?? '–'} (${x.leased} leased, ${x.ms} ms)`).join(', ')}`).join('; ');
    const grew = r.growth ? `one lease of 100 beside a backlog held behind identifies, by backlog: ${growth(r.growth)}; ` : '';
    const grewBefore = r.previous_code?.growth ? `; previous code, same: ${growth(r.previous_code.growth)}` : '';
    return {
      headline: `${grew}one lease of ${r.lease} from ${r.entries} waiting, drained, load average ${r.load_average.before[0]} → ${r.load_average.after[0]} on ${r.cpus} cores: ${runs(r.results)}${r.previous_code ? `; previous code (lanes cut before readiness), load ${r.previous_code.load_average.before[0]}: ${runs(r.previous_code.results)}` : ''}${grewBefore}`,
      targets: [],
    };
  },
  durability(r) {
    const line = (x) =>
      `sequential p50 ${x.sequential.p50_ms} ms (${x.sequential.items_per_second} items/s), ${r.concurrent} in flight ${x.concurrent.items_per_second} items/s p50 ${x.concurrent.p50_ms} ms${
        x.concurrent.event_loop_busy === undefined
          ? ''
          : `, event loop busy ${Math.round(x.concurrent.event_loop_busy * 100)}%, CPU ${x.concurrent.cpu_ms_per_100_items} ms per 100 items`
      }`;
    return {
      headline: `SQLite outbox accept of ${r.batch} items, load average ${r.load_average.before[0]} → ${r.load_average.after[0]} on ${r.cpus} cores: ${
        r.synced ? `NORMAL + WAL synced before each answer (the relay's, two runs) ${r.synced.map(line).join(' / ')}; ` : ''
      }synchronous=FULL ${line(r.full)}; NORMAL${r.synced ? ', no sync' : ' (before, two runs)'} ${r.normal.map(line).join(' / ')}`,
      targets: [],
    };
  },
  connections(r) {
    const last = r.steps.filter((step) => step.collectStatus === 200).at(-1);
    return {
      headline: `${r.held} idle connections held with /collect answering (${last?.collectMs ?? '?'} ms at the last step; fd limit ${r.fdLimit}); ${r.reaped} of ${r.opened} closed by the relay within ${Math.round(r.reapedMs / 1000)} s`,
      targets: [],
    };
  },
  size(r) {
    const ours = r.rows.find((row) => row.name === 'cdp-edge');
    const peers = r.rows.filter((row) => row.name !== 'cdp-edge');
    const ratios = peers.map((p) => `${p.name} ${p.ratioToCdpEdge.scriptGzip}×`).join(', ');
    const entries = (r.entries ?? [])
      .map((e) =>
        e.adds ? `; ${e.entry} adds ${e.adds.gzip} B gzip (app ${e.app.gzip} B${e.without ? ` without ${e.without}` : ''})` : `; ${e.entry} 0 B in the browser`,
      )
      .join('');
    return {
      headline: `dist/cdp.js ${ours.script.gzip} B gzip / ${ours.script.brotli} B brotli; app bundle ${ours.app.gzip} B gzip${entries}; peers' script gzip vs ours: ${ratios}`,
      targets: [target('dist/cdp.js gzip bytes', ours.script.gzip, `≤ ${r.budget?.target ?? 4096}`, ours.script.gzip <= (r.budget?.target ?? 4096))],
    };
  },
  emulator(r) {
    const gets = Object.entries(r.person_get).map(([name, q]) => `${name} p50 ${q.p50_ms} ms`);
    const worst = Math.max(...Object.values(r.person_get).map((q) => q.p50_ms));
    return {
      headline: `${r.people} people; person/get ${gets.join(', ')}; ${r.load.merges_per_second} merges/s`,
      targets: [target('worst person/get p50 ms', worst, '≤ 50', worst <= (r.target_p50_ms ?? 50))],
    };
  },
  'relay-proxy'(r) {
    // Results written before the Node entry had its own front measured the Hono-mounted proxy as `ratio`.
    const relay = (x) => (x.hono_ratio === undefined ? x.proxy : x.entry);
    const parts = Object.entries(r.results).map(
      ([name, x]) =>
        `${name}: relay ${relay(x).rps} rps vs bare ${x.bare.rps} (${x.ratio}×), p99 ${relay(x).p99_ms} vs ${x.bare.p99_ms} ms` +
        (x.hono_ratio === undefined ? '' : `; mounted in a Hono app ${x.proxy.rps} rps (${x.hono_ratio}×)`),
    );
    // Information beside a bare pass-through, no longer a target: what limits a deployment is the
    // platform's ceiling, and what it costs is the relay's CPU per item (the delivery bench).
    return { headline: parts.join('; '), targets: [] };
  },
  'relay-cpu'(r) {
    const parts = cpuRounds(r);
    const hundred = r.results.find((x) => x.items === 100);
    return {
      headline: `workerd CPU per /collect: ${parts.join(', ')}`,
      targets: [
        target(
          'CPU ms per 100-item /collect in workerd',
          hundred?.msPerRequest,
          `≤ ${r.target?.maxMsPerRequest ?? 2}`,
          hundred?.msPerRequest <= (r.target?.maxMsPerRequest ?? 2),
        ),
      ],
    };
  },
  // The Queues path (`--queued`): what /collect costs when it hands entries to a queue and calls no store.
  'relay-cpu-queued'(r) {
    return { headline: `workerd CPU per /collect on the Queues path (no store call): ${cpuRounds(r).join(', ')}`, targets: [] };
  },
  snippet(r) {
    const perTask = r.track.one_call_per_task_incl_write;
    return {
      headline:
        `track() one call per task incl. its IndexedDB write: median ${perTask?.median_us} µs, p99 ${perTask?.p99_us} µs over ${perTask?.calls} calls; ` +
        `the synchronous part alone reads ${r.track.median_us} µs median at the page's 5 µs timer; ` +
        `drain ${r.drain.received}/${r.drain.events} events in ${r.drain.requests} requests (100 items per batch), ${r.drain.events_per_second} events/s`,
      targets: [
        target(
          'drain requests for 10,000 events (100 per batch, so this holds while batching works)',
          r.drain.requests,
          `≤ ${r.drain.target_requests ?? 100}`,
          r.drain.requests <= (r.drain.target_requests ?? 100),
        ),
      ],
    };
  },
  peers(r) {
    const ours = r.rows.find((row) => row.sdk === 'cdp-edge');
    const held = r.rows.find((row) => row.sdk.startsWith('cdp-edge, ') && !row.sdk.includes('baseline'));
    const cpu = r.rows
      .filter((row) => row.ok && row.cpu_us_per_call !== undefined && row.sdk !== 'no-op')
      .map((row) => `${row.sdk} ${row.cpu_us_per_call} µs${row.cpu_us_per_call_best === undefined ? '' : ` (best ${row.cpu_us_per_call_best})`}`);
    const parts = r.rows.map((row) => (row.ok ? `${row.sdk} ${row.block_mean_median_us} µs` : `${row.sdk} failed (${row.error})`));
    if (!r.targets) {
      return {
        headline: `track() mean per call in Chromium (blocks of 100; median per call ${ours?.median_us} µs for cdp-edge at a 5 µs timer): ${parts.join(', ')}`,
        targets: [target('cdp-edge track() median µs (ESM app)', ours?.median_us, `≤ ${r.target_median_us}`, ours?.median_us <= r.target_median_us)],
      };
    }
    const t = r.targets;
    return {
      headline: `main-thread CPU per track() incl. deferred work${r.rows[0]?.rounds ? `, median of ${r.rows[0].rounds} rounds` : ''}: ${cpu.join(', ')}; cdp-edge settled median ${ours?.settled?.median_ms} ms, last ${ours?.settled?.last_after_burst_ms} ms after the burst`,
      targets: [
        target('cdp-edge CPU µs per track() incl. deferred', ours?.cpu_us_per_call, `≤ ${t.cpu_us_per_call}`, ours?.cpu_us_per_call <= t.cpu_us_per_call),
        target('cdp-edge CPU µs per track() with 1,000 held', held?.cpu_us_per_call, `≤ ${t.cpu_us_per_call}`, held?.cpu_us_per_call <= t.cpu_us_per_call),
        target('cdp-edge track() settled median ms', ours?.settled?.median_ms, `≤ ${t.settled_median_ms}`, ours?.settled?.median_ms <= t.settled_median_ms),
        target(
          'cdp-edge last track() settled after the burst ms',
          ours?.settled?.last_after_burst_ms,
          `≤ ${t.settled_all_within_ms}`,
          ours?.settled?.unsettled === 0 && ours?.settled?.last_after_burst_ms <= t.settled_all_within_ms,
        ),
      ],
    };
  },
  // `collect.ts --rate N`: every server at one pace, an open loop; CPU per item is the figure.
  'collect-paced'(r) {
    const parts = r.results.map(
      (x) =>
        `${r.requests_per_second} requests/s of ${x.items} items: relay CPU ${x.relay_noop.cpu_ms_per_100_items} vs bare ${x.bare_noop.cpu_ms_per_100_items} ms per 100 items (${x.cpu_ratio}×), ` +
        `p50 ${x.relay_noop.p50_ms} vs ${x.bare_noop.p50_ms} ms, p99 ${x.relay_noop.p99_ms} vs ${x.bare_noop.p99_ms} ms` +
        (x.ladder
          ? `; ladder, CPU per 100 items (× the bare's): ${Object.entries(x.ladder)
              .map(([rung, step]) => `${rung} ${step.cpu_ms_per_100_items} ms (${step.cpu_ratio}×)`)
              .join(', ')}`
          : ''),
    );
    const load = r.load_average_1m ? ` (load average ${r.load_average_1m.before} → ${r.load_average_1m.after})` : '';
    return { headline: `an open loop, as pages send: ${parts.join('; ')}${load}`, targets: [] };
  },
  collect(r) {
    const parts = r.results.map(
      (x) =>
        `${x.items} items: relay ${x.relay_noop.rps} rps vs bare ${x.bare_noop.rps} (${x.ratio}×), p99 ${x.relay_noop.p99_ms} vs ${x.bare_noop.p99_ms} ms` +
        (x.relay_noop.cpu_ms_per_100_items === undefined
          ? ''
          : `, CPU ${x.relay_noop.cpu_ms_per_100_items} vs ${x.bare_noop.cpu_ms_per_100_items} ms per 100 items${x.cpu_ratio === undefined ? '' : ` (${x.cpu_ratio}×)`}, RSS ${x.rss_mb} MB`) +
        (x.relay_noop.platform_calls_per_100_items === undefined
          ? ''
          : `, platform calls per 100 items ${x.relay_noop.platform_calls_per_100_items} vs ${x.bare_noop.platform_calls_per_100_items}`) +
        (x.relay_emulator ? `; via emulator ${x.relay_emulator.rps} vs ${x.bare_emulator.rps} rps (${x.ratio_emulator}×)` : ''),
    );
    // The relay beside a bare pass-through at batches of 10 (CPU for accept and deliver, and
    // requests/s, in the same run), and memory under load.
    const rss = Math.max(...r.results.map((x) => x.rss_mb ?? Number.NaN));
    const ten = r.results.find((x) => x.items === 10);
    const load = r.load_average_1m ? ` (load average ${r.load_average_1m.before} → ${r.load_average_1m.after})` : '';
    // `collect.ts --ladder`: the servers between the pass-through and the relay, in the same rounds.
    const ladder = ten?.ladder
      ? [
          `; ladder at batches of 10, CPU per 100 items (× the bare's) and requests/s (× the bare's): ` +
            Object.entries(ten.ladder)
              .map(([rung, x]) => `${rung} ${x.cpu_ms_per_100_items} ms (${x.cpu_ratio}×) ${x.rps} rps (${x.ratio}×)`)
              .join(', '),
        ]
      : [];
    return {
      headline: parts.join('; ') + ladder.join('') + load,
      targets: [
        ...(r.target_rss_mb === undefined ? [] : [target('relay RSS MB under load', rss, `≤ ${r.target_rss_mb}`, rss <= r.target_rss_mb)]),
        ...(ten && r.target_cpu_ratio_batch_10 !== undefined
          ? [
              target(
                'relay CPU per 100 items vs a bare pass-through, batches of 10 (×)',
                ten.cpu_ratio,
                `≤ ${r.target_cpu_ratio_batch_10}`,
                ten.cpu_ratio <= r.target_cpu_ratio_batch_10,
              ),
              target(
                'relay requests/s vs a bare pass-through, batches of 10 (×)',
                ten.ratio,
                `≥ ${r.target_ratio_batch_10}`,
                ten.ratio >= r.target_ratio_batch_10,
              ),
            ]
          : []),
      ],
    };
  },
  workers(r) {
    const p = r.phases ?? {};
    const t = r.targets ?? {};
    const pct = (share) => (typeof share === 'number' ? Math.round(share * 1000) / 10 : share);
    const line = (x) =>
      `${x.offered_items_per_second} items/s offered: ${x.entries_per_call} entries per call (${x.platform_calls} calls, 429s ${x.platform_429}), ` +
      `${x.durable_object_requests_per_collect} Durable Object requests per /collect, busiest object ${x.busiest_object.name} ${pct(x.busiest_object_share)}% ` +
      `(busiest outbox or router ${pct(x.busiest_outbox_or_router_share)}%), workerd CPU ${x.workerd_cpu_ms_per_100_items} ms per 100 items, ` +
      `${pct(x.delivered_in_real_time_share)}% in real time, created → platform p50 ${x.created_to_platform_ms.p50} ms, /collect p50 ${x.collect_ms.p50} ms, ` +
      `${x.drained ? `drained in ${x.drain_seconds} s` : `not drained after ${x.drain_seconds} s`}, not delivered ${x.not_delivered_after_drain}${
        x.outbox_after_drain
          ? ` (the outbox held ${x.outbox_after_drain.pending} pending, ${x.outbox_after_drain.dead} dead letters: ${
              Object.entries(x.outbox_after_drain.dead_reasons)
                .map(([reason, n]) => `${n} ${reason}`)
                .join(', ') || 'none'
            })`
          : ''
      }, duplicated ${x.duplicated}`;
    const targets = [];
    const at300 = p['300'];
    if (at300 && t.entries_per_call_at_300 !== undefined)
      targets.push(
        target(
          'Workers, 300 items/s: entries per platform call',
          at300.entries_per_call,
          `≥ ${t.entries_per_call_at_300}`,
          at300.entries_per_call >= t.entries_per_call_at_300,
        ),
      );
    for (const [name, x] of Object.entries(p)) {
      if (t.busiest_object_share !== undefined)
        targets.push(
          target(
            `Workers, ${name} items/s: busiest object's % of Durable Object requests`,
            pct(x.busiest_object_share),
            `≤ ${pct(t.busiest_object_share)}`,
            x.busiest_object_share <= t.busiest_object_share,
          ),
        );
      targets.push(
        target(
          `Workers, ${name} items/s: items duplicated or not delivered after the drain`,
          x.duplicated + x.not_delivered_after_drain,
          '0',
          x.duplicated + x.not_delivered_after_drain === 0,
        ),
      );
    }
    return {
      headline: `wrangler dev (workerd), ${r.cpus} cores, load average ${r.load_average?.before?.[0]} → ${r.load_average?.after?.[0]}; ${Object.values(p).map(line).join('; ')}`,
      targets,
    };
  },
  delivery(r) {
    const p = r.phases ?? {};
    const t = r.targets ?? {};
    const pct = (share) => (typeof share === 'number' ? Math.round(share * 1000) / 10 : share);
    const flooded = (x) =>
      `one address flooding at ${x.flood.offered_items_per_second} items/s beside ${x.offered_items_per_second} items/s from other visitors: the others' created → platform p50 ${x.created_to_platform_ms.p50} ms p99 ${x.created_to_platform_ms.p99} ms; ` +
      `the flood's ${x.flood.items} items: ${x.flood.accepted} accepted, ${x.flood.answered_retry} answers of retry (Retry-After ${Object.keys(x.flood.retry_after ?? {}).join('/') || 'none'} s), /collect statuses ${Object.entries(
        x.flood.collect_statuses ?? {},
      )
        .map(([status, n]) => `${status}×${n}`)
        .join(' ')}; ` +
      `${x.flood.delivered_after_load === undefined ? '' : `after the load, its ${x.flood.delivered_after_load} items left went in ${x.flood.after_load_seconds} s (${x.flood.after_load_per_second ?? '–'} items/s); `}` +
      `${x.entries_per_call} entries per call, ${x.drained ? `drained in ${x.drain_seconds} s` : `not drained after ${x.drain_seconds} s`}, lost ${x.lost + x.flood.lost}, duplicated ${x.duplicated + x.flood.duplicated}`;
    const load = (x) => (x.load_average ? ` (load average ${x.load_average.join(' → ')})` : '');
    const proxied = (x) => (x.proxy ? ` with a server's proxy call a second (${x.proxy.calls} calls, ${x.proxy.answered_429} answered 429)` : '');
    const line = (name, x) =>
      x.flood
        ? flooded(x) + load(x)
        : `${name === 'cpu' ? `${x.offered_items_per_second} items/s in batches of 10` : name === 'pages' ? `as pages send (${x.browsers} browsers, one item a request, ${x.offered_items_per_second} items/s in all)` : `${x.offered_items_per_second} items/s offered${x.platform_ms_per_call === 50 ? '' : ` (platform ${x.platform_ms_per_call} ms per call)`}`}${(x.key_calls_per_second ?? 10) === 10 ? '' : ` to a key of ${x.key_calls_per_second} calls/s`}${proxied(x)}: ` +
          `${x.delivered_per_second_in_real_time} items/s delivered in real time (${pct(x.delivered_in_real_time_share)}%), ${x.entries_per_call} entries per call, ` +
          `429s ${pct(x.platform_429_share)}% of ${x.platform_calls} calls, created → platform p50 ${x.created_to_platform_ms.p50} ms p99 ${x.created_to_platform_ms.p99} ms, ` +
          `/collect p50 ${x.collect_ms.p50} ms p99 ${x.collect_ms.p99} ms${x.collect_timeouts ? `, ${x.collect_timeouts} /collect timeouts` : ''}, ${x.drained ? `drained in ${x.drain_seconds} s` : `not drained after ${x.drain_seconds} s (${x.items - x.delivered_after_drain} of ${x.items} not delivered)`}, ` +
          `lost ${x.lost}, duplicated ${x.duplicated}, relay CPU ${x.relay_cpu_ms_per_100_items} ms per 100 items${load(x)}`;
    const atMost = (what, value, limit) => target(what, value, `≤ ${limit}`, value <= limit);
    const atLeast = (what, value, limit) => target(what, value, `≥ ${limit}`, value >= limit);
    const at300 = p['300'];
    const at1500 = p['1500'];
    const targets = [];
    if (at300) {
      targets.push(
        atLeast('300 items/s, 10 calls/s: % delivered in real time', pct(at300.delivered_in_real_time_share), pct(t.real_time_share_at_300)),
        atMost('300 items/s: % of platform calls answered 429', pct(at300.platform_429_share), pct(t.platform_429_share_at_300)),
        atMost('300 items/s: created → platform p50 ms', at300.created_to_platform_ms.p50, t.p50_ms_at_300),
        atMost('300 items/s: created → platform p99 ms', at300.created_to_platform_ms.p99, t.p99_ms_at_300),
      );
    }
    if (at1500) {
      const left = at1500.items - at1500.delivered_after_drain;
      targets.push(
        atLeast('1,500 items/s, 10 calls/s: items/s delivered in real time', at1500.delivered_per_second_in_real_time, t.delivered_per_second_at_1500),
        atLeast('1,500 items/s: entries per platform call', at1500.entries_per_call, t.entries_per_call_at_1500),
        ...(t.platform_429_calls_at_1500 === undefined
          ? []
          : [atMost('1,500 items/s: platform calls answered 429', at1500.platform_429, t.platform_429_calls_at_1500)]),
        target('1,500 items/s: items not delivered after the drain', left, '0', left === 0 && at1500.drained),
        target('1,500 items/s: items lost or duplicated', at1500.lost + at1500.duplicated, '0', at1500.lost + at1500.duplicated === 0),
      );
    }
    if (p.business && t.delivered_per_second_at_business !== undefined)
      targets.push(
        atLeast(
          `${p.business.offered_items_per_second} items/s, ${p.business.key_calls_per_second} calls/s: items/s delivered in real time`,
          p.business.delivered_per_second_in_real_time,
          t.delivered_per_second_at_business,
        ),
      );
    if (p.flood?.flood && t.others_p50_ms_in_flood !== undefined) {
      const f = p.flood;
      const lostOrTwice = f.lost + f.duplicated + f.flood.lost + f.flood.duplicated;
      targets.push(
        atMost("one address flooding 2,000 items/s: the other visitors' created → platform p50 ms", f.created_to_platform_ms.p50, t.others_p50_ms_in_flood),
        target('flood: its items answered retry past its caps (not accepted without bound)', f.flood.answered_retry, '> 0', f.flood.answered_retry > 0),
        target('flood: items lost or duplicated after the drain, both', lostOrTwice, '0', lostOrTwice === 0 && f.drained),
      );
      if (t.flood_drain_per_second !== undefined && f.flood.after_load_per_second !== undefined)
        targets.push(
          atLeast('flood: items/s delivered to the flooding address once the load stopped', f.flood.after_load_per_second ?? 0, t.flood_drain_per_second),
        );
    }
    if (p.pages && t.delivered_per_second_at_pages !== undefined) {
      const x = p.pages;
      targets.push(
        atLeast(
          'as pages send, 1,500 browsers one item a request: items/s delivered in real time',
          x.delivered_per_second_in_real_time,
          t.delivered_per_second_at_pages,
        ),
        atMost('as pages send: created → platform p50 ms', x.created_to_platform_ms.p50, t.p50_ms_at_pages),
        atMost('as pages send: /collect requests timed out', x.collect_timeouts ?? 0, t.collect_timeouts_at_pages),
        atMost('as pages send: platform calls answered 429', x.platform_429, t.platform_429_calls_at_pages),
      );
    }
    if (p.proxy?.proxy && t.platform_429_calls_with_proxy !== undefined)
      targets.push(
        atMost(
          '1,500 items/s and a proxy call a second: platform and relay answers 429',
          p.proxy.platform_429 + p.proxy.proxy.answered_429,
          t.platform_429_calls_with_proxy,
        ),
        atLeast(
          '1,500 items/s and a proxy call a second: items/s delivered in real time',
          p.proxy.delivered_per_second_in_real_time,
          t.delivered_per_second_at_1500,
        ),
      );
    if (p['slow-platform'])
      targets.push(atMost('/collect p50 ms, platform taking 500 ms per call', p['slow-platform'].collect_ms.p50, t.collect_p50_ms_slow_platform));
    if (p.cpu)
      targets.push(
        atMost(
          `relay CPU ms per 100 items, ${p.cpu.offered_items_per_second} items/s in batches of 10`,
          p.cpu.relay_cpu_ms_per_100_items,
          t.relay_cpu_ms_per_100_items_batch_10,
        ),
      );
    return {
      headline: `relay ${r.commit}, ${r.cpus} cores, load average ${r.load_average?.before?.[0]} → ${r.load_average?.after?.[0]}; ${Object.entries(p)
        .map(([name, x]) => line(name, x))
        .join('; ')}`,
      targets,
    };
  },
  state(r) {
    const rates = r.throughput.map((x) => `${x.store} ${x.pairs_per_second} claim+settle/s`).join(', ');
    const peak = r.sqlite.at_peak;
    const after = r.sqlite.after_expiry;
    const o = r.outbox;
    const outbox = o
      ? `; outbox ids remembered (${o.ids} measured): SQLite ${o.sqlite.bytes_per_id} B/id${o.redis ? `, Redis ${o.redis.bytes_per_id} B/id` : ''}, a 7-day window at 300 items/s = SQLite ${o.sqlite.window_7d_300_per_s_gib} GiB${o.redis ? `, Redis ${o.redis.window_7d_300_per_s_gib} GiB` : ''}`
      : '';
    return {
      headline: `SQLite with ${peak.ids} ids: ${peak.megabytes} MB, reopen ${peak.reopen_ms} ms; after they expired and as many more came: ${after.megabytes} MB, reopen ${after.reopen_ms} ms; one process: ${rates}${outbox}`,
      targets: [
        target('SQLite reopen ms at 1,000,000 ids', peak.reopen_ms, `≤ ${r.sqlite.target_reopen_ms}`, peak.reopen_ms <= r.sqlite.target_reopen_ms),
        target(
          'SQLite file after expiry vs at peak',
          Math.round((after.bytes / peak.bytes) * 100) / 100,
          '≤ 1.2× (bounded by the window)',
          after.bytes <= peak.bytes * 1.2,
        ),
      ],
    };
  },
  chaos(r) {
    const parts = r.scenarios.map(
      (s) =>
        `${s.name} ${s.arrived}/${s.sent}${s.held ? ` held ${s.held}` : ''}${s.lost ? ` lost ${s.lost}` : ''}${s.duplicated ? ` dup ${s.duplicated}` : ''}`,
    );
    // Held events are in the relay's dead-letter list (calls whose outcome was unknown): neither lost
    // nor sent twice, but they wait for an operator. A count to read, not a target to meet.
    const held = r.totals.held === undefined ? '' : `, ${r.totals.held} held as dead letters`;
    return {
      headline: `${r.totals.sent} events${held}: ${parts.join(', ')}`,
      targets: [
        target('events lost', r.totals.lost, '0', r.totals.lost === 0),
        target('events duplicated', r.totals.duplicated, '0', r.totals.duplicated === 0),
        // Held only the events of calls whose outcome the relay could not know, each listed for the operator (results from before it: not counted).
        ...(r.totals.misheld === undefined
          ? []
          : [target('events held but not in doubt, or in doubt but not held', r.totals.misheld, '0', r.totals.misheld === 0)]),
      ],
    };
  },
  fuzz(r) {
    return {
      headline: `${r.cases} cases (FUZZ_RUNS=${r.fuzz_runs}, seed ${r.seed}) over ${r.targets.map((t) => `${t.target} ${t.cases}`).join(', ')}; ${r.passed ? 'every case met its oracle (refused: 4xx in the documented shape, nothing forwarded, state unchanged; accepted: forwarded once at the fixed path), no 5xx, heap flat' : 'FAILURES, see the vitest output'}`,
      targets: [target('fuzz cases failing', r.passed ? 0 : 1, '0', r.passed)],
    };
  },
};

/** `{ headline, targets }` for a bench's results JSON. */
export function summarise(name, result) {
  const read = READERS[name];
  if (!read) return { headline: `results in bench/results/${name}.json`, targets: [] };
  try {
    return read(result);
  } catch (error) {
    return { headline: `results in bench/results/${name}.json (summary could not read them: ${error.message})`, targets: [] };
  }
}
