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
import { DEFAULT_BLOB_GRACE_MS, blobVerdict } from '../../blobs/sweep.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import { messageOf } from '../../errors.ts';
import { blobStoreOf, referencesIn } from '../blob-target.ts';
import type { OpenedLog } from '../log-options.ts';

interface CheckOptions extends LogOptions {
  safetyOnly?: boolean;
  graceMs: number;
  maxPendingInputs: number;
  maxPendingBytes: number;
  blobGraceMs: number;
}

/**
 * The blobs beside the log against the events: a referenced blob the store lacks is MISSING (a
 * violation: the session cannot be read whole), an unreferenced one older than the grace period
 * ORPHANED (left behind; `sessiond blobs sweep` removes it). Returns how many are missing.
 */
async function checkBlobs(opened: OpenedLog, events: readonly SessionEvent[], graceMs: number, out: (line: string) => void): Promise<number> {
  let store: Awaited<ReturnType<typeof blobStoreOf>>;
  try {
    store = await blobStoreOf(opened);
  } catch (err) {
    out(`NOTE blobs not checked: their store could not be opened (${messageOf(err)})`);
    return 0;
  }
  if (!store) return 0;
  const references = referencesIn(events);
  let missing = 0;
  for (const [sha256, where] of references) {
    if (await store.has(sha256)) continue;
    missing++;
    const first = where[0]!;
    out(
      `MISSING blob ${sha256} referenced by session ${first.sessionId} at seq ${first.seq}${where.length > 1 ? ` (and ${where.length - 1} other session${where.length === 2 ? '' : 's'})` : ''}: the store does not hold it, so that session cannot be read whole; restore it from an export (sessiond replay) or its original bytes`,
    );
  }
  const now = systemClock.now();
  let orphaned = 0;
  let bytes = 0;
  for await (const blob of store.list()) {
    if (blobVerdict(blob, references.has(blob.sha256), now, graceMs) !== 'orphaned') continue;
    orphaned++;
    bytes += blob.size;
    out(
      `ORPHANED blob ${blob.sha256} (${blob.mediaType}, ${blob.size} bytes): no event references it and it was last stored at ${new Date(blob.storedAt).toISOString()}, more than ${graceMs / 1000} s ago`,
    );
  }
  if (orphaned > 0)
    out(
      `${orphaned} orphaned blob${orphaned === 1 ? '' : 's'} (${bytes} bytes) left behind (a deleted session's, or an admission that stopped before its event); sessiond blobs sweep removes ${orphaned === 1 ? 'it' : 'them'}, as workers do every ten minutes; not a violation`,
    );
  if (missing > 0) out(`${missing} referenced blob${missing === 1 ? ' is' : 's are'} missing`);
  return missing;
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
      )
      .option(
        '--blob-grace-ms <n>',
        'blobs: an unreferenced blob stored more recently than this is not yet orphaned (an admission may be about to reference it)',
        nonNegativeInt('--blob-grace-ms'),
        DEFAULT_BLOB_GRACE_MS,
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
      if ((await checkBlobs(opened, events, opts.blobGraceMs, (line) => ctx.out(line))) > 0) process.exitCode = 1;
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
