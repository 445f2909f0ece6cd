/**
 * Takeover: a real worker process (test/support/worker-process.ts, mode "work", runner
 * "crash:mid-step") holds a session mid-step; a second worker runs beside it. The first is killed
 * with SIGKILL; we time until the second claims the session (its CLAIMED line, and the committed
 * execution.claimed event's time). Lease 2 s (renewed every 667 ms, a third), sweep every 1 s.
 */
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { systemClock } from '../../src/clock.ts';
import { randomIds } from '../../src/ids.ts';
import { spawnWorker, type WorkerHandle } from '../../test/support/processes.ts';
import { percentile } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import { trackChild } from '../lib/cleanup.ts';
import type { Ctx, Section } from '../lib/context.ts';

const LEASE_MS = 2_000;
const SWEEP_MS = 1_000;
const HEARTBEAT_MS = 667;

interface Trial {
  toClaimedLineMs: number;
  toClaimEventMs: number;
  recoveredAfterKillMs: number;
}

async function trial(ctx: Ctx, i: number): Promise<Trial> {
  const file = join(ctx.tmp, `takeover-${i}.db`);
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const workers: WorkerHandle[] = [];
  try {
    const handler = new CommandHandler(log, systemClock, randomIds);
    await admitInput(handler, 'ses_k', { id: 'inp_user', prompt: 'please send the invoice to bob', wake: false });
    const common = { file, mode: 'work', leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, sweepMs: SWEEP_MS };
    const a = spawnWorker({ ...common, runner: 'crash:mid-step', sessions: ['ses_k'] });
    const b = spawnWorker({ ...common, sessions: [] });
    workers.push(a, b);
    trackChild(a.child);
    trackChild(b.child);
    const claimed = await a.waitForLine((l) => l.startsWith('CLAIMED '));
    const stale = claimed.split(' ')[2]!;
    await a.waitForLine((l) => l === 'POINT mid-step');
    await b.waitForLine((l) => l.startsWith('READY'));
    // let B's worker start its subscription and first sweep, and A renew its lease at least once
    await new Promise((r) => setTimeout(r, 1_000));
    const killedAt = Date.now();
    const killedPerf = performance.now();
    a.child.kill('SIGKILL');
    await a.exited;
    const line = await b.waitForLine((l) => l.startsWith('CLAIMED ses_k') && !l.includes(stale), 20_000);
    const lineMs = performance.now() - killedPerf;
    const events = await log.readSession('ses_k');
    const next = events.find((e) => e.type === 'execution.claimed' && e.payload.executionId === line.split(' ')[2]);
    const recovered = events.find((e) => e.type === 'recovery.completed');
    if (!next || !recovered) throw new Error('no recovery or second claim in the log');
    return { toClaimedLineMs: lineMs, toClaimEventMs: next.time - killedAt, recoveredAfterKillMs: recovered.time - killedAt };
  } finally {
    for (const w of workers) {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }
    await log.close();
    db.close();
  }
}

export const takeover: Section = {
  name: 'takeover',
  title: `takeover after SIGKILL of the owner process (lease ${LEASE_MS} ms, sweep ${SWEEP_MS} ms)`,
  async run(ctx) {
    const S = 'takeover';
    const trials: Trial[] = [];
    for (let i = 0; i < ctx.sizes.takeoverTrials; i++) {
      const t = await trial(ctx, i);
      trials.push(t);
      say(
        S,
        `trial ${i + 1}/${ctx.sizes.takeoverTrials}: CLAIMED line ${t.toClaimedLineMs.toFixed(0)} ms after SIGKILL (execution.claimed at +${t.toClaimEventMs} ms, recovery.completed at +${t.recoveredAfterKillMs} ms)`,
      );
    }
    const lines = trials.map((t) => t.toClaimedLineMs);
    const claims = trials.map((t) => t.toClaimEventMs);
    const target = LEASE_MS + SWEEP_MS + 500;
    const note = `${trials.length} trials; kill -> CLAIMED line [${lines.map((x) => x.toFixed(0)).join(', ')}] ms; kill -> execution.claimed event time [${claims.join(', ')}] ms; heartbeat ${HEARTBEAT_MS} ms`;
    ctx.results.add(
      {
        key: 'takeover.max',
        section: S,
        figure: 'takeover after SIGKILL, worst of trials',
        unit: 'ms',
        value: Math.max(...lines),
        note,
      },
      { max: target },
    );
    ctx.results.add(
      {
        key: 'takeover.p50',
        section: S,
        figure: 'takeover after SIGKILL, median',
        unit: 'ms',
        value: percentile(lines, 50),
      },
      { max: target },
    );
  },
};
