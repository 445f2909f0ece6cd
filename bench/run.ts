/**
 * sessiond benchmarks: `npm run bench` (quick, under 3 minutes on 2 cores) or
 * `npm run bench -- --full` (larger sizes). One process; it starts its own nats-server (via
 * src/testing/nats-server.ts), prints progress on stderr, one table on stdout, and writes the
 * results to bench/results/latest.json plus a timestamped copy. Everything it starts (nats-server,
 * child processes, temp dirs) is stopped or removed at the end, also on failure or Ctrl-C.
 *
 *   --full            larger sizes (1M events for the replay memory figure)
 *   --only a,b        run only these sections (and the baselines they need); results go to
 *                     bench/results/partial-<time>.json, latest.json is left alone
 *   --list            list the sections
 *
 * Profiling a section: node --cpu-prof --cpu-prof-dir=bench/results/profiles --import tsx \
 *   bench/run.ts --only projector   then   npx tsx bench/profile-summary.ts <file.cpuprofile>
 */
import { dirname, join } from 'node:path';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { NatsServer } from '../src/testing/nats-server.ts';
import { startBenchNatsServer } from './nats.ts';
import { captureTemplate } from './lib/corpus.ts';
import { cleanupAll, onCleanup, tempDir } from './lib/cleanup.ts';
import { machineInfo } from './lib/machine.ts';
import { Results, say, table, writeJson } from './lib/report.ts';
import { fullGc } from './lib/measure.ts';
import { FULL, QUICK, type Ctx, type Section } from './lib/context.ts';
import { rawMsgpack } from './sections/raw.ts';
import { jsAppend, projector, sqliteAppend } from './sections/logs.ts';
import { turnsEmbedded, turnsNats } from './sections/turns.ts';
import { turnCeiling } from './sections/turn-ceiling.ts';
import { replayExport, replayJs } from './sections/replay.ts';
import { memoryActors, memoryReplay } from './sections/memory.ts';
import { takeover } from './sections/takeover.ts';
import { coldLoad } from './sections/cold-load.ts';
import { idleSessions } from './sections/idle-sessions.ts';
import { inspector } from './sections/inspector.ts';
import { cluster, subjectScale } from './sections/cluster.ts';
import { listSessions } from './sections/list.ts';
import { gatewayStreams } from './sections/gateway.ts';
import { parallelTools } from './sections/parallel-tools.ts';
import { sessionCalls } from './sections/session-calls.ts';
import { tracing } from './sections/tracing.ts';
import { modelCallLimits } from './sections/model-call-limits.ts';
import { blobs } from './sections/blobs.ts';

const SECTIONS: Section[] = [
  rawMsgpack,
  sqliteAppend,
  projector,
  jsAppend,
  turnsEmbedded,
  turnsNats,
  turnCeiling,
  replayExport,
  replayJs,
  memoryActors,
  memoryReplay,
  idleSessions,
  coldLoad,
  inspector,
  listSessions,
  gatewayStreams,
  parallelTools,
  sessionCalls,
  tracing,
  modelCallLimits,
  blobs,
  takeover,
  cluster,
  subjectScale,
];

/** Table order: raw ceilings first, then each figure after its section. */
const ORDER = [
  'raw.sqlite.txn',
  'raw.sqlite.batch',
  'raw.js.publish',
  'raw.js.consume',
  'raw.msgpack',
  'sqlite.append',
  'projector.apply',
  'js.append',
  'turns.embedded.turns',
  'turns.embedded.latency.p50',
  'turns.embedded.latency.p99',
  'turns.nats.turns',
  'turns.nats.latency.p50',
  'turns.nats.latency.p99',
  'raw.turn.normal',
  'turn.embedded.normal',
  'turn.embedded.normal.cpu',
  'raw.turn.full',
  'turn.embedded.full',
  'turn.embedded.full.cpu',
  'raw.turn.alone',
  'turn.embedded.alone',
  'raw.turn.js',
  'turn.nats',
  'raw.turn.js.alone',
  'turn.nats.alone',
  'replay.export',
  'replay.js',
  'replay.js.subscribe',
  'replay.js.readPages',
  'memory.actors',
  'memory.replay.peak',
  'memory.idle',
  'coldload.short',
  'coldload.long',
  'turn.fresh',
  'turn.long',
  'inspector.session.1k',
  'inspector.session.100k',
  'inspector.session.ratio',
  'inspector.at.middle.1k',
  'inspector.at.middle.100k',
  'inspector.at.middle.ratio',
  'inspector.at.end.1k',
  'inspector.at.end.100k',
  'inspector.at.end.ratio',
  'inspector.chart.1k',
  'inspector.chart.100k',
  'inspector.chart.ratio',
  'inspector.conversation.1k',
  'inspector.conversation.100k',
  'inspector.conversation.ratio',
  'inspector.session.1m',
  'inspector.session.1m.first',
  'inspector.session.1m.ratio',
  'inspector.at.middle.1m',
  'inspector.at.middle.1m.first',
  'inspector.at.middle.1m.ratio',
  'inspector.at.end.1m',
  'inspector.at.end.1m.first',
  'inspector.at.end.1m.ratio',
  'inspector.chart.1m',
  'inspector.chart.1m.first',
  'inspector.chart.1m.ratio',
  'inspector.conversation.1m',
  'inspector.conversation.1m.first',
  'inspector.conversation.1m.ratio',
  'inspector.start.1m',
  'inspector.heap.1m',
  'inspector.session.bytes',
  'list.first',
  'list.deep',
  'list.tag.first',
  'list.tag.deep',
  'list.tags.first',
  'list.state.first',
  'list.prefix.few',
  'list.prefix.all',
  'list.prefix.oldest',
  'gateway.turns.ratio',
  'gateway.events',
  'gateway.delay.p50',
  'gateway.delay.p99',
  'takeover.max',
  'takeover.p50',
  'codec.roundtrip',
  'hydrate.rate',
  'raw.js.publish.noAsyncTraces',
  'js.append.retained',
  'blobs.sqlite',
  'blobs.nats',
];

function usage(): never {
  process.stderr.write(`usage: npm run bench [-- --full] [-- --only ${SECTIONS.map((s) => s.name).join(',')}]\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) usage();
if (argv.includes('--list')) {
  for (const s of SECTIONS) process.stdout.write(`${s.name.padEnd(16)} ${s.title}\n`);
  process.exit(0);
}
const known = new Set(['--full', '--only', '--list']);
const onlyIndex = argv.indexOf('--only');
const only = onlyIndex >= 0 ? new Set((argv[onlyIndex + 1] ?? '').split(',').filter(Boolean)) : undefined;
for (const [i, a] of argv.entries()) if (!known.has(a) && !(onlyIndex >= 0 && i === onlyIndex + 1)) usage();
if (only) for (const name of only) if (!SECTIONS.some((s) => s.name === name)) usage();
const full = argv.includes('--full');

const startedAt = new Date();
const t0 = performance.now();
const results = new Results();
const machine = machineInfo();
process.stderr.write(
  `sessiond bench (${full ? 'full' : 'quick'}${only ? `, only ${[...only].join(',')}` : ''}) on ${machine.nproc} CPUs (${machine.cpu}), ${machine.memoryGb} GB, ${machine.os}\n`,
);
process.stderr.write(`  node ${machine.node}, ${machine.natsServer}, ${machine.sqlite}, temp dir ${machine.tmpFs}\n`);
process.stderr.write(
  `  load average at start ${machine.loadAverage.map((l) => l.toFixed(2)).join(' ')} (other work on the machine skews the figures; compare ratios, which are measured side by side)\n`,
);
process.stderr.write(
  `  gc: ${typeof (globalThis as { gc?: unknown }).gc === 'function' ? 'exposed' : 'not exposed'}; memory figures run in child processes with --expose-gc\n`,
);

let server: NatsServer | undefined;
let serverStarting: Promise<NatsServer> | undefined;
const ran = new Map<string, Promise<void>>();
let exitCode = 0;

try {
  const tmp = tempDir();
  say('setup', 'capturing the echo-turn template (two real turns on an embedded engine)');
  const template = await captureTemplate();
  say('setup', `one echo turn = ${template.eventsPerTurn} events in ${template.appendsPerTurn} appends`);
  const ctx: Ctx = {
    full,
    sizes: full ? FULL : QUICK,
    tmp,
    results,
    template,
    nats: () =>
      (serverStarting ??= (async () => {
        say('setup', 'starting nats-server');
        server = await startBenchNatsServer();
        onCleanup('nats-server', () => server!.dispose());
        say('setup', `nats-server up at ${server.url} (pid ${server.pid})`);
        return server;
      })()),
    need: (name) => runSection(name),
  };
  const runSection = (name: string): Promise<void> => {
    const existing = ran.get(name);
    if (existing) return existing;
    const section = SECTIONS.find((s) => s.name === name)!;
    const p = (async () => {
      say(section.name, `-- ${section.title}`);
      const s0 = performance.now();
      fullGc();
      try {
        await section.run(ctx);
      } catch (err) {
        results.error(section.name, err);
        exitCode = 1;
      }
      say(section.name, `done in ${((performance.now() - s0) / 1000).toFixed(1)} s (load average ${loadavg()[0]!.toFixed(2)})`);
    })();
    ran.set(name, p);
    return p;
  };
  for (const s of SECTIONS) if (!only || only.has(s.name)) await runSection(s.name);
} catch (err) {
  results.error('setup', err);
  exitCode = 1;
} finally {
  say('cleanup', 'stopping nats-server, child processes; removing temp dirs');
  await cleanupAll();
}

results.figures.sort((a, b) => {
  const ia = ORDER.indexOf(a.key);
  const ib = ORDER.indexOf(b.key);
  return (ia < 0 ? ORDER.length : ia) - (ib < 0 ? ORDER.length : ib);
});
const seconds = (performance.now() - t0) / 1000;
const text = table(results);
process.stdout.write(`\n${text}\n\n`);
const missed = results.figures.filter((f) => f.holds === false);
process.stdout.write(
  `${results.figures.filter((f) => f.holds === true).length} targets hold, ${missed.length} missed${missed.length ? ` (${missed.map((f) => f.key).join(', ')})` : ''}; ${results.errors.length} sections failed; ${seconds.toFixed(0)} s\n`,
);
const here = dirname(fileURLToPath(import.meta.url));
const payload = {
  startedAt: startedAt.toISOString(),
  mode: full ? 'full' : 'quick',
  only: only ? [...only] : null,
  seconds,
  machine,
  loadAverageAtEnd: loadavg(),
  sizes: full ? FULL : QUICK,
  figures: results.figures,
  errors: results.errors,
  table: text,
};
const resultsDir = join(here, 'results');
if (only) {
  const { stamped } = writeJson(join(resultsDir, 'partial'), payload, startedAt);
  process.stdout.write(`partial results written to ${stamped}\n`);
} else {
  const { latest, stamped } = writeJson(resultsDir, payload, startedAt);
  process.stdout.write(`results written to ${latest} and ${stamped}\n`);
}
process.exit(exitCode);
