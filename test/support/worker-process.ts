/**
 * A real worker process for the multi-process tests: `node --import tsx worker-process.ts '<json>'`.
 * Prints one line per turn it runs (`RUN <session> <execution> <inputs>`) and `DONE` when finished.
 *   mode "contend": keeps resuming the given sessions until none has pending work.
 *   mode "hold":    resumes one session with a slow echo runner and stays until killed.
 */
import { openDatabase } from '../../src/storage/sqlite.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { stateOf } from '../../src/machines/decider.ts';
import type { Runner } from '../../src/runner/types.ts';

interface Args { waitForGo?: boolean; file: string; mode: 'contend' | 'hold'; sessions: string[]; leaseMs?: number; heartbeatMs?: number; echoDelayMs?: number; echoSteps?: number; ownerId?: string }
const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const db = openDatabase(args.file);
migrate(db);
const log = new SqliteEventLog(db);
const echo = echoRunner({ delayMs: args.echoDelayMs ?? 0, steps: args.echoSteps ?? 1 });
const runner: Runner = async (ctx) => {
  process.stdout.write(`RUN ${ctx.sessionId} ${ctx.executionId} ${ctx.inputs.map((i) => i.inputId).join(',')}\n`);
  await echo(ctx);
};
const execution = new SessionExecution({
  log, runner, leaseMs: args.leaseMs ?? 30_000, heartbeatMs: args.heartbeatMs ?? 10_000,
  ...(args.ownerId ? { ownerId: args.ownerId } : {}),
  onNotice: (n) => { if (n.type === 'claimed') process.stdout.write(`CLAIMED ${n.sessionId} ${n.executionId}\n`); },
});
process.stdout.write(`READY ${execution.ownerId}\n`);
if (args.waitForGo) {
  // a start barrier: the parent releases all workers at once so they really contend
  await new Promise<void>((resolve) => process.stdin.on('data', (d) => { if (String(d).includes('GO')) resolve(); }));
  process.stdin.destroy();
}

if (args.mode === 'hold') {
  await execution.resume(args.sessions[0]!);
  await new Promise(() => {}); // until killed
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
process.stdout.write('DONE\n');
