/**
 * The inspector on a long session: the session view, time travel to the middle and to the end, the
 * chart at a seq and the conversation at the head, on a 100,000-event session next to the same views
 * on a 1,000-event one (each under 200 ms and within 2x), and the session view's response size; with
 * --full, on a 1,005,000-event session too: the p50, the first request after a restart (asked at
 * once, while the restarted inspector follows the log again) and the heap. Sessions are written with
 * the echo-turn corpus; the inspector keeps its index beside the log (SqliteInspectorIndex, as
 * `sessiond start --inspect` does) and follows the log first; one warm-up request per view (its time
 * is in the note), then each view is asked SAMPLES times over HTTP and the p50 kept.
 */
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { trackChild } from '../lib/cleanup.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { eventImporter } from '../../src/storage/sqlite/import-events.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { SqliteSnapshotStore } from '../../src/storage/sqlite/sqlite-snapshot-store.ts';
import { evolve, initialSnapshot } from '../../src/machines/decider.ts';
import { systemClock } from '../../src/clock.ts';
import { CHECKPOINT_EVERY } from '../../src/inspector/store.ts';
import { cloneTurn, sessionName } from '../lib/corpus.ts';
import { fullGc, percentile } from '../lib/measure.ts';
import { say, fmt } from '../lib/report.ts';
import type { Ctx, Section } from '../lib/context.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

const S = 'inspector';
const SAMPLES = 15;
const VIEWS = ['session', 'at.middle', 'at.end', 'chart', 'conversation', 'list', 'types', 'time'] as const;
/** Views whose work is a page of events (fewer on a 1,000-event session than on any longer one). */
const PAGED = new Set<View>(['list', 'types', 'time']);
/** Events written to the log while the inspector is down, before the restart (its tail). */
const TAIL_EVENTS = 15_000;
type View = (typeof VIEWS)[number];

interface Measured {
  events: number;
  p50: Record<View, number>;
  warm: Record<View, number>;
  bytes: Record<View, number>;
  /** The inspector's start and its follow of the whole log (building the index), ms. */
  startMs: number;
  followMs: number;
  /** Heap used after a full GC with the log followed (MB). */
  heapMb: number;
  /** With `restart`: each view asked once by a restarted inspector, at once (ms), and its start (ms). */
  restarted?: { startMs: number; first: Record<View, number>; tail: number; tailMs: number };
  /** With `restart`: each view asked once right after the first start, while it indexes the log (ms). */
  indexing?: Record<View, number>;
}

/** Each view asked once, in order, by a child process (plain node, started at once) after the page itself, as a browser opening it: the time of each request as the child measured it. */
function askFromChild(url: string, paths: Record<View, string>): Promise<Record<View, number>> {
  const script = `
    const [url, paths] = [process.argv[1], JSON.parse(process.argv[2])];
    const out = {};
    await (await fetch(new URL('/', url))).text(); // the page first, as a browser opens it
    for (const [view, path] of Object.entries(paths)) {
      const t0 = performance.now();
      const res = await fetch(new URL(path, url));
      await res.arrayBuffer();
      if (!res.ok) throw new Error(path + ': HTTP ' + res.status);
      out[view] = performance.now() - t0;
    }
    console.log('RESULT ' + JSON.stringify(out));`;
  return new Promise((resolve, reject) => {
    const child = trackChild(spawn(process.execPath, ['--input-type=module', '-e', script, url, JSON.stringify(paths)], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)) as Record<View, number>);
      else reject(new Error(`the asking child exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

/** Resolves once the inspector has folded the log up to its head. */
async function followed(inspector: Inspector, log: SqliteEventLog): Promise<void> {
  const head = await log.head();
  while (inspector.store.getSnapshot().context.position < head) await new Promise((r) => setTimeout(r, 20));
}

async function measure(ctx: Ctx, events: number, restart = false): Promise<Measured> {
  const db = openDatabase(join(ctx.tmp, `inspector-${events}.db`));
  migrate(db);
  const importer = eventImporter(db);
  let lastSeq = 0;
  // written straight to the log in big batches (the views do not depend on how events were appended)
  let batch: SessionEvent[] = [];
  let turn = 0;
  // with `restart` (the long log, as workers wrote it): the workers' latest snapshot of the session, as a worker stores one when a turn settles
  let snapshot = initialSnapshot(sessionName(0));
  const snapshots = restart ? new SqliteSnapshotStore(db, systemClock) : undefined;
  for (; lastSeq < events; turn++) {
    const evs = cloneTurn(ctx.template, 0, turn).flatMap((b) => b.events);
    if (snapshots) for (const e of evs) snapshot = evolve(snapshot, e);
    batch.push(...evs);
    lastSeq = evs[evs.length - 1]!.seq;
    if (batch.length >= 20_000) {
      importer(batch);
      batch = [];
    }
  }
  if (batch.length > 0) importer(batch);
  await snapshots?.put(snapshot);
  const log = new SqliteEventLog(db);
  const t0 = performance.now();
  // the workers' snapshots beside the log, as `sessiond inspect --db` reads them
  let inspector = await startInspector({ log, port: 0, index: new SqliteInspectorIndex(db), ...(snapshots ? { snapshots } : {}) });
  try {
    const startMs = performance.now() - t0;
    const id = encodeURIComponent(sessionName(0));
    // the middle, half a checkpoint interval past one at every size (a fold of the average length)
    const middle = Math.floor(lastSeq / 2 / CHECKPOINT_EVERY) * CHECKPOINT_EVERY + CHECKPOINT_EVERY / 2;
    const paths: Record<View, string> = {
      session: `/api/sessions/${id}`,
      'at.middle': `/api/sessions/${id}/at/${middle}`,
      'at.end': `/api/sessions/${id}/at/${lastSeq}`,
      chart: `/api/chart.svg?session=${id}&seq=${middle}`,
      conversation: `/api/sessions/${id}/conversation`,
      list: '/api/sessions',
      types: `/api/sessions/${id}/events?type=execution.settled&before=${middle}&limit=50`,
      time: `/api/sessions/${id}/events?time=${(await log.readSession(sessionName(0), { afterSeq: middle - 1, limit: 1 }))[0]!.time}&limit=50`,
    };
    // with `restart` (the long log): each view asked once while the first start still indexes the log (an upgrade)
    const indexing = restart ? await askFromChild(inspector.url, paths) : undefined;
    if (indexing) say(S, `${fmt(lastSeq)} events, while the first start indexes the log: ${VIEWS.map((v) => `${v} ${indexing[v].toFixed(1)} ms`).join(', ')}`);
    await followed(inspector, log); // the store follows the whole log; the index is built beside it
    const followMs = performance.now() - t0;
    say(S, `${fmt(lastSeq)} events: the inspector listened after ${startMs.toFixed(0)} ms and followed the log in ${followMs.toFixed(0)} ms`);
    const get = async (view: View) => {
      const s0 = performance.now();
      const res = await fetch(new URL(paths[view], inspector.url));
      const body = await res.arrayBuffer();
      if (!res.ok) throw new Error(`${paths[view]}: HTTP ${res.status}`);
      return { ms: performance.now() - s0, bytes: body.byteLength };
    };
    const warm = {} as Record<View, number>;
    for (const view of VIEWS) warm[view] = (await get(view)).ms;
    const samples = Object.fromEntries(VIEWS.map((v) => [v, [] as number[]])) as Record<View, number[]>;
    const bytes = {} as Record<View, number>;
    for (let i = 0; i < SAMPLES; i++) {
      for (const view of VIEWS) {
        const r = await get(view);
        samples[view].push(r.ms);
        bytes[view] = r.bytes;
      }
    }
    const p50 = Object.fromEntries(VIEWS.map((v) => [v, percentile(samples[v], 50)])) as Record<View, number>;
    say(S, `${fmt(lastSeq)} events: ${VIEWS.map((v) => `${v} ${p50[v].toFixed(1)} ms`).join(', ')}`);
    fullGc();
    const heapMb = process.memoryUsage().heapUsed / 1e6;
    say(S, `${fmt(lastSeq)} events: heap ${heapMb.toFixed(0)} MB with the log followed`);
    const measured: Measured = { events: lastSeq, p50, warm, bytes, startMs, followMs, heapMb, ...(indexing ? { indexing } : {}) };
    if (restart) {
      // a restart: the index is read from beside the log; each view asked once, at once, while it follows the log again
      await inspector.close();
      // the log grows while the inspector is down: its tail
      const headBefore = await log.head();
      const tailEvents: SessionEvent[] = [];
      for (; tailEvents.length < TAIL_EVENTS; turn++) tailEvents.push(...cloneTurn(ctx.template, 0, turn).flatMap((b) => b.events));
      importer(tailEvents);
      for (const e of tailEvents) snapshot = evolve(snapshot, e);
      await snapshots?.put(snapshot);
      const tail = (await log.head()) - headBefore;
      const r0 = performance.now();
      inspector = await startInspector({ log, port: 0, index: new SqliteInspectorIndex(db), ...(snapshots ? { snapshots } : {}) });
      const restartMs = performance.now() - r0;
      // asked from another process, as a browser asks: its own steps wait for nothing the inspector does
      const first = await askFromChild(inspector.url, paths);
      await followed(inspector, log);
      const tailMs = performance.now() - r0;
      say(
        S,
        `${fmt(lastSeq)} events, restarted (listening after ${restartMs.toFixed(0)} ms, the ${fmt(tail)}-event tail followed after ${tailMs.toFixed(0)} ms): ${VIEWS.map((v) => `${v} ${first[v].toFixed(1)} ms`).join(', ')}`,
      );
      measured.restarted = { startMs: restartMs, first, tail, tailMs };
    }
    return measured;
  } finally {
    await inspector.close();
    await log.close();
    db.close();
  }
}

const LABELS: Record<View, string> = {
  session: 'session view (state + last page)',
  'at.middle': 'time travel to the middle (state + rows)',
  'at.end': 'time travel to the last seq (state + rows)',
  chart: 'chart at the middle seq',
  conversation: 'conversation view at the head (the last 100 entries)',
  list: 'session list',
  types: 'timeline by type before the middle (50 execution.settled)',
  time: 'timeline at the middle time (50 events)',
};

export const inspector: Section = {
  name: 'inspector',
  title: 'the inspector on a 100,000-event session vs a 1,000-event one: session view, time travel, chart at a seq',
  async run(ctx) {
    const short = await measure(ctx, 1_000);
    const long = await measure(ctx, 100_000);
    for (const view of VIEWS) {
      const note = (m: Measured) =>
        `${fmt(m.events)} events; p50 of ${SAMPLES} HTTP requests, ${fmt(m.bytes[view])} bytes; first request after start ${m.warm[view].toFixed(0)} ms`;
      ctx.results.add(
        {
          key: `inspector.${view}.1k`,
          section: S,
          figure: `inspector ${LABELS[view]}, 1,000 events, p50`,
          unit: 'ms',
          value: short.p50[view],
          note: note(short),
        },
        { max: 200 },
      );
      ctx.results.add(
        {
          key: `inspector.${view}.100k`,
          section: S,
          figure: `inspector ${LABELS[view]}, 100,000 events, p50`,
          unit: 'ms',
          value: long.p50[view],
          note: note(long),
        },
        { max: 200 },
      );
      // the list and the timeline's pages read a page's worth of events, fewer on a short session: compared at 1,005,000 vs 100,000 only
      if (!PAGED.has(view))
        ctx.results.add(
          {
            key: `inspector.${view}.ratio`,
            section: S,
            figure: `inspector ${LABELS[view]}, 100,000 vs 1,000 events`,
            unit: 'ms',
            value: long.p50[view],
            raw: { label: `the same view on 1,000 events`, value: short.p50[view], unit: 'ms' },
            note: note(long),
          },
          { maxRatio: 2 },
        );
    }
    if (ctx.full) {
      // 1,005,000 events (67,000 echo turns): the same views, p50 and first request after a restart, next to 100,000
      const million = await measure(ctx, 1_005_000, true);
      const n = fmt(million.events);
      for (const view of VIEWS) {
        const note = `${n} events; p50 of ${SAMPLES} HTTP requests, ${fmt(million.bytes[view])} bytes; first request after the first start and follow ${million.warm[view].toFixed(0)} ms`;
        ctx.results.add(
          { key: `inspector.${view}.1m`, section: S, figure: `inspector ${LABELS[view]}, ${n} events, p50`, unit: 'ms', value: million.p50[view], note },
          { max: 200 },
        );
        ctx.results.add(
          {
            key: `inspector.${view}.1m.first`,
            section: S,
            figure: `inspector ${LABELS[view]}, ${n} events, first request after a restart`,
            unit: 'ms',
            value: million.restarted!.first[view],
            note: `${n} events; the inspector restarted over its index beside the log (listening after ${million.restarted!.startMs.toFixed(0)} ms), then a child process opened the page and asked each view once, in turn, at once, while the inspector follows the log again`,
          },
          { max: 200 },
        );
        ctx.results.add({
          key: `inspector.${view}.1m.indexing`,
          section: S,
          figure: `inspector ${LABELS[view]}, ${n} events, while a first start indexes the log`,
          unit: 'ms',
          value: million.indexing![view],
          note: `${n} events never indexed (an upgrade): a child process asked each view once, in turn, right after the first start listened, while it follows the whole log (no target: what stays slow until the index is built)`,
        });
        ctx.results.add(
          {
            key: `inspector.${view}.1m.ratio`,
            section: S,
            figure: `inspector ${LABELS[view]}, ${n} vs 100,000 events`,
            unit: 'ms',
            value: million.p50[view],
            raw: { label: 'the same view on 100,000 events', value: long.p50[view], unit: 'ms' },
            note,
          },
          { maxRatio: 2 },
        );
      }
      ctx.results.add({
        key: 'inspector.start.1m',
        section: S,
        figure: `inspector start over ${n} events (listening; the follow goes on behind)`,
        unit: 'ms',
        value: million.startMs,
        note: `then the whole log followed (the index built beside it, once) in ${(million.followMs / 1000).toFixed(1)} s; a restart listened after ${million.restarted!.startMs.toFixed(0)} ms`,
      });
      ctx.results.add(
        {
          key: 'inspector.restart.tail.1m',
          section: S,
          figure: `inspector restart over ${n} events: the list complete (the follow resumed, the tail read)`,
          unit: 'ms',
          value: million.restarted!.tailMs,
          note: `${fmt(million.restarted!.tail)} events written while it was down; the follow resumes from the index beside the log (position, each session's state, the timeline's blocks) and reads only them`,
        },
        { max: 5_000 },
      );
      ctx.results.add(
        {
          key: 'inspector.heap.1m',
          section: S,
          figure: `inspector heap with ${n} events followed, vs 100,000`,
          unit: 'MB',
          value: million.heapMb,
          raw: { label: 'the same with 100,000 events followed', value: long.heapMb, unit: 'MB' },
          note: 'heap used after a full GC, the whole bench process (checkpoints and marks kept beside the log, not in memory)',
        },
        { maxRatio: 2 },
      );
    }
    ctx.results.add(
      {
        key: 'inspector.session.bytes',
        section: S,
        figure: 'inspector session view response, 100,000 vs 1,000 events',
        unit: 'bytes',
        value: long.bytes.session,
        raw: { label: 'the session view of 1,000 events', value: short.bytes.session, unit: 'bytes' },
        note: 'the state, the context (up to 1,000 admitted input ids) and the last 100 events',
      },
      { maxRatio: 2 },
    );
  },
};
