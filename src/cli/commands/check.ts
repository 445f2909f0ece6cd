import type { Command } from 'commander';
import { auditLog } from '../../audit/audit-log.ts';
import { auditLiveness, DEFAULT_LIVENESS_GRACE_MS } from '../../audit/liveness.ts';
import { lateWrites } from '../../audit/late-writes.ts';
import { stoppedTurns } from '../../audit/stopped-turns.ts';
import { systemClock } from '../../clock.ts';
import type { CliContext } from '../context.ts';
import { nonNegativeInt, positiveInt } from '../options.ts';
import { DEFAULT_LIMITS } from '../../input/limits.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';
import { describeQuarantine, type QuarantinedMessage } from '../../events/quarantine.ts';

interface CheckOptions extends LogOptions {
  safetyOnly?: boolean;
  graceMs: number;
  maxPendingInputs: number;
  maxPendingBytes: number;
}

export function registerCheck(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('check')
      .description(
        'audit a log: safety (never two owners, fencing, promotion once...) and liveness (nothing stranded); exits 1 when any is violated; warns of writes committed after their lease expired',
      )
      .option('--safety-only', 'skip the liveness checks (for a log that is still being written)')
      .option(
        '--grace-ms <n>',
        'liveness: work younger than this is not yet late (lease + sweep + margin)',
        nonNegativeInt('--grace-ms'),
        DEFAULT_LIVENESS_GRACE_MS,
      )
      .option(
        '--max-pending-inputs <n>',
        "liveness: the workers' limit of pending inputs per session (a session at it refuses new prompts)",
        positiveInt('--max-pending-inputs'),
        DEFAULT_LIMITS.maxPendingInputs,
      )
      .option(
        '--max-pending-bytes <n>',
        "liveness: the workers' limit of pending prompt bytes per session",
        positiveInt('--max-pending-bytes'),
        DEFAULT_LIMITS.maxPendingBytes,
      ),
    ctx,
  ).action(async (opts: CheckOptions) => {
    const quarantined: QuarantinedMessage[] = [];
    const opened = await openLog(opts, ctx, { readonly: true, onQuarantine: (q) => quarantined.push(q) });
    try {
      const events = await opened.log.readAll();
      const sessions = new Set(events.map((e) => e.sessionId)).size;
      const violations = [
        ...auditLog(events),
        ...(opts.safetyOnly
          ? []
          : auditLiveness(events, {
              now: systemClock.now(),
              graceMs: opts.graceMs,
              limits: { maxPendingInputs: opts.maxPendingInputs, maxPendingBytes: opts.maxPendingBytes },
            })),
      ];
      const late = lateWrites(events);
      for (const w of late) ctx.out(`WARNING late_write at seq ${w.seq}: ${w.message}`);
      if (late.length > 0) {
        ctx.out(
          `${late.length} write${late.length === 1 ? ' was' : 's were'} committed after the lease ${late.length === 1 ? 'it was' : 'they were'} decided under had expired (up to ${Math.max(...late.map((w) => w.lagMs))} ms late); fencing accepted ${late.length === 1 ? 'it' : 'them'}, so this is a warning, not a violation`,
        );
      }
      const stopped = stoppedTurns(events);
      for (const t of stopped) ctx.out(`NOTE ${t.type} at seq ${t.seq} (session ${t.sessionId}, ${t.executionId}): ${t.message.replace(/\s+/g, ' ')}`);
      if (stopped.length > 0)
        ctx.out(
          `${stopped.length} turn${stopped.length === 1 ? ' was' : 's were'} stopped by a limit (step limit or deadline) and settled failed; not a violation`,
        );
      for (const q of quarantined) ctx.out(`QUARANTINED ${describeQuarantine(q)}`);
      if (quarantined.length > 0) {
        ctx.out(
          `${quarantined.length} stored message${quarantined.length === 1 ? ' is' : 's are'} not valid sessiond event batches and ${quarantined.length === 1 ? 'was' : 'were'} skipped (written by something other than a sessiond worker); the events around ${quarantined.length === 1 ? 'it' : 'them'} were checked`,
        );
        process.exitCode = 1;
      }
      const checked = `no two live owners, each input promoted at most once, cancellations final, no writes after expiry, each execution recovered at most once, calls run only once approved and once, no timer or scheduled prompt early, a child's end delivered once${opts.safetyOnly ? '; liveness not checked' : `; nothing stranded, no timer overdue and no parent waiting on an ended child for more than ${opts.graceMs / 1000} s, no session at its pending limits`}`;
      if (violations.length === 0) {
        ctx.out(`${opened.describe}: ${events.length} events in ${sessions} sessions, ${quarantined.length > 0 ? 'otherwise ' : ''}no violations (${checked})`);
        return;
      }
      for (const v of violations) ctx.out(`VIOLATION ${v.rule} at seq ${v.seqs.join(', ')}: ${v.message}`);
      ctx.out(`${violations.length} violation${violations.length === 1 ? '' : 's'} in ${events.length} events`);
      process.exitCode = 1;
    } finally {
      await opened.close();
    }
  });
}
