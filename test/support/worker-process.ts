/**
 * A real worker process for the multi-process tests: `node --import tsx worker-process.ts '<json>'`.
 * Prints `READY <owner>`, `CLAIMED <session> <execution>`, `CLAIM_LOST <session> <execution>`,
 * `SETTLED <session> <execution> <outcome>`, `RUN <session> <execution> <inputs>`, `POINT <name>`
 * (a crash runner reached its kill point) and `DONE`.
 *   mode "contend": keeps resuming the given sessions until none has pending work, then exits.
 *   mode "hold":    resumes one session and stays until killed.
 *   mode "work":    a whole worker (startSessiond: projection, recovery sweep, log subscription) until killed.
 * runner "echo" (default) or "crash:<after-claim|mid-step|mid-tool|after-settle>": the first turn
 * stops at that point and waits to be killed; later turns echo. `freezeAfterSettle` blocks the
 * process (prints `FROZEN`) right after its first settle, before it can claim the next turn.
 * `stopBeforeAppend: "<event type>"` stops the process with SIGSTOP (a real OS freeze; prints
 * `STOPPING <session> <type>` first) the first time it is about to append an event of that type:
 * after the write was decided, before the log has it. `stopAfterAppend: { type, count }` stops it
 * right after the count-th append holding that type is committed (prints `STOPPED <session> <ms>`,
 * the time of the stop): a freeze outside any SQLite transaction. The test resumes it with SIGCONT.
 * `admitImage` (mode "work"): admits a prompt with an image into each session (with `stopBeforeAppend:
 * "input.admitted"`, the process stops after its blob is stored, before its event is appended).
 * `module`: a runner module whose default export runs every turn instead (imported after `env` is
 * set in the process's environment: what the module reads when it loads).
 */
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { startSessiond } from '../../src/host.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import type { Notice } from '../../src/execution/session-execution.ts';
import type { RecoveryNotice } from '../../src/recovery/sweeper.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { stateOf } from '../../src/machines/decider.ts';
import type { Runner } from '../../src/runner/types.ts';
import { pngBytes } from './png.ts';

interface Args {
  waitForGo?: boolean;
  file: string;
  mode: 'contend' | 'hold' | 'work';
  sessions: string[];
  runner?: string;
  leaseMs?: number;
  heartbeatMs?: number;
  sweepMs?: number;
  echoDelayMs?: number;
  echoSteps?: number;
  ownerId?: string;
  /** Freeze the whole process right after its first settle is committed (then the test kills it): the crash between a settle and the next claim. */
  freezeAfterSettle?: boolean;
  /** Stop the process (SIGSTOP) between deciding the first event of this type and appending it. */
  stopBeforeAppend?: string;
  /** Stop the process (SIGSTOP) once the count-th append holding this type is committed (outside any transaction). */
  stopAfterAppend?: { type: string; count: number };
  /** A runner module (its default export runs every turn), and variables set before it is imported. */
  module?: string;
  env?: Record<string, string>;
  /** In mode "contend": the first turn this process runs waits (up to 30 s) until another owner has claimed a turn, so both surely run turns. */
  meetOthers?: boolean;
  /** In mode "work": admit a prompt with a PNG image of this many bytes into each session once ready (stored as a blob first). */
  admitImage?: { size: number; seed: number };
}
const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const say = (line: string) => process.stdout.write(`${line}\n`);
const forever = () => new Promise<never>(() => {});

/** Stops the process (SIGSTOP) the first time it is about to append an event of `type`: after the write was decided, before the log has it. */
function stoppingBefore(log: EventLog, type: string): EventLog {
  const append = log.append.bind(log);
  let stopped = false;
  log.append = (sessionId, expectedSeq, drafts) => {
    if (!stopped && drafts.some((d) => d.type === type)) {
      stopped = true;
      say(`STOPPING ${sessionId} ${type}`); // a synchronous write on a pipe: the line is out before the stop
      process.kill(process.pid, 'SIGSTOP');
    }
    return append(sessionId, expectedSeq, drafts);
  };
  return log;
}
/**
 * Stops the process (SIGSTOP) once the `count`-th append holding an event of `type` is committed.
 * better-sqlite3 runs each transaction synchronously, so a callback after an append resolves is
 * never inside one: the frozen process holds no write lock and the others can fence it.
 */
function stoppingAfter(log: EventLog, type: string, count: number): EventLog {
  const append = log.append.bind(log);
  let seen = 0;
  log.append = async (sessionId, expectedSeq, drafts) => {
    const events = await append(sessionId, expectedSeq, drafts);
    if (drafts.some((d) => d.type === type) && ++seen === count) {
      say(`STOPPED ${sessionId} ${Date.now()}`);
      process.kill(process.pid, 'SIGSTOP');
    }
    return events;
  };
  return log;
}
const decorate = (log: EventLog): EventLog => {
  if (args.stopBeforeAppend) return stoppingBefore(log, args.stopBeforeAppend);
  if (args.stopAfterAppend) return stoppingAfter(log, args.stopAfterAppend.type, args.stopAfterAppend.count);
  return log;
};
if (args.env) Object.assign(process.env, args.env);
const fromModule = args.module ? ((await import(args.module)) as { default: Runner }).default : undefined;
const echo = echoRunner({ delayMs: args.echoDelayMs ?? 0, steps: args.echoSteps ?? 1 });
let crashed = false;
const crash = async (point: string, ctx: Parameters<Runner>[0]) => {
  crashed = true;
  if (point === 'after-claim') {
    say('POINT after-claim');
    return forever();
  }
  const { messageId } = await ctx.startStep();
  await ctx.phase('unknown');
  await ctx.text(messageId, 'half an answer');
  if (point === 'mid-step') {
    say('POINT mid-step');
    return forever();
  }
  if (point === 'mid-tool') {
    await ctx.tool(messageId, { name: 'send_invoice', input: { to: 'bob' } }, async () => {
      say('POINT mid-tool');
      return forever();
    });
  }
  await ctx.endStep(messageId);
  if (point === 'after-settle') setTimeout(() => say('POINT after-settle'), 0);
};
let met = !args.meetOthers;
/** Waits until the log holds a claim by another owner than `self` (or 30 s have passed: the test then says who ran what). */
const meet = async (self: string) => {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const events = await log.readAll();
    if (events.some((e) => e.type === 'execution.claimed' && e.payload.ownerId !== self)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
};
const runner: Runner = async (ctx) => {
  say(`RUN ${ctx.sessionId} ${ctx.executionId} ${ctx.inputs.map((i) => i.inputId).join(',')}`);
  if (!met) {
    met = true;
    await meet(execution.ownerId);
  }
  if (fromModule) return fromModule(ctx);
  if (args.runner?.startsWith('crash:') && !crashed) return crash(args.runner.slice(6), ctx);
  await echo(ctx);
};
const onNotice = (n: Notice | RecoveryNotice) => {
  if (n.type === 'claimed') say(`CLAIMED ${n.sessionId} ${n.executionId}`);
  if (n.type === 'claim_lost') say(`CLAIM_LOST ${n.sessionId} ${n.executionId}`);
  // what went wrong, for a failing test's message (a test's line matchers never match these)
  if (!['claimed', 'claim_lost', 'settled'].includes(n.type)) say(`NOTICE ${JSON.stringify(n)}`);
  if (n.type === 'settled') {
    say(`SETTLED ${n.sessionId} ${n.executionId} ${n.outcome}`);
    if (args.freezeAfterSettle) {
      say('FROZEN');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); // blocks this thread for good: nothing else runs
    }
  }
};
const lease = { leaseMs: args.leaseMs ?? 30_000, heartbeatMs: args.heartbeatMs ?? 10_000 };
const goBarrier = async () => {
  if (!args.waitForGo) return;
  // a start barrier: the parent releases all workers at once so they really contend
  await new Promise<void>((resolve) =>
    process.stdin.on('data', (d) => {
      if (String(d).includes('GO')) resolve();
    }),
  );
  process.stdin.destroy();
};

if (args.mode === 'work') {
  // a whole worker, as sessiond start runs it (projection, recovery sweep, log subscription)
  const host = await startSessiond({
    db: args.file,
    runner,
    ...lease,
    sweepMs: args.sweepMs ?? 1_000,
    wakeBackoffMs: 200,
    onNotice,
    ...(args.stopBeforeAppend || args.stopAfterAppend ? { decorateLog: decorate } : {}),
  });
  say(`READY ${host.ownerId}`);
  await goBarrier();
  if (args.admitImage) {
    const data = pngBytes(args.admitImage.size, args.admitImage.seed).toString('base64');
    for (const s of args.sessions)
      void host.engine.admit(s, {
        prompt: [
          { type: 'text', text: 'what is this?' },
          { type: 'image', data, mediaType: 'image/png' },
        ],
      });
  } else for (const s of args.sessions) await host.engine.resume(s);
  process.once(
    'SIGTERM',
    () =>
      void host.close().then(() => {
        say('DONE');
        process.exit(0);
      }),
  );
  await forever();
}

const db = openDatabase(args.file);
migrate(db);
const log = decorate(new SqliteEventLog(db));
const execution = new SessionExecution({ log, runner, ...lease, ...(args.ownerId ? { ownerId: args.ownerId } : {}), onNotice });
say(`READY ${execution.ownerId}`);
await goBarrier();

if (args.mode === 'hold') {
  await execution.resume(args.sessions[0]!);
  await forever();
}
const deadline = Date.now() + 60_000;
for (;;) {
  let busy = false;
  for (const s of args.sessions) {
    await execution.resume(s);
    const snap = await execution.status(s);
    if (snap.context.pending.length > 0 || !['idle', 'settled'].includes(stateOf(snap))) busy = true;
  }
  if (!busy || Date.now() > deadline) break;
  await new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 5)));
}
for (const s of args.sessions) await execution.awaitIdle(s);
await execution.close();
await log.close();
db.close();
say('DONE');
