/**
 * `sessiond status [SESSION] [--json]`: one session through `Sessions` (the log at rest, or a
 * worker's `status` command with `--nats`). Without a session: a page of sessions, newest first,
 * each one's status, and how to get the next page (status-page.ts); never the whole log.
 */
import { isoTime } from '../../clock.ts';
import type { Command } from 'commander';
import { ExitCode } from '../exit.ts';
import { validateId } from '../../ids.ts';
import { ErrorCode, UsageError, boundText, isSessiondError, oneLine } from '../../errors.ts';
import type { SessionStatus } from '../../sessions/sessions.ts';
import { MAX_LIST_LIMIT } from '../../sessions/list.ts';
import type { Wait } from '../../machines/session-context.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';
import { DEFAULT_STATUS_PAGE, statusPage } from '../status-page.ts';
import { describeCapacityWait } from '../../capacity/waiting.ts';

type StatusOptions = LogOptions & { json?: boolean; limit?: number; after?: string };

export function registerStatus(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('status')
      .description('state, owner, lease left, phase, pending inputs and recovery of one session (or of the newest, a page at a time)')
      .argument('[session]', 'session id (without it: the newest sessions, a page at a time)')
      .option('--json', 'print it as JSON (without a session: { "sessions": [...], "next": cursor | null })')
      .option('--limit <n>', `without a session: sessions per page (default ${DEFAULT_STATUS_PAGE}, at most ${MAX_LIST_LIMIT})`, positiveInt('--limit'))
      .option('--after <cursor>', 'without a session: the page after this cursor (printed at the end of the page before)'),
    ctx,
  ).action(async (session: string | undefined, opts: StatusOptions) => {
    const show = (status: SessionStatus) => {
      for (const line of opts.json ? [JSON.stringify(status)] : describeStatus(status)) ctx.out(line);
    };
    if (session !== undefined) {
      validateId(session, 'session id');
      if (opts.limit !== undefined || opts.after !== undefined)
        throw new UsageError(`--limit and --after page through sessions when no session is named: drop them to see ${session}, or drop ${session} to page.`);
      await withSessions(
        opts,
        ctx,
        'sessiond-status',
        async ({ sessions, describe }) => {
          try {
            show(await sessions.status(session));
          } catch (err) {
            if (!isSessiondError(err) || err.code !== ErrorCode.NotFound || err.details.sessionId !== session) throw err;
            ctx.out(opts.json ? JSON.stringify({ sessionId: session, state: 'unknown', seq: 0 }) : `${session}: no such session (no events in ${describe})`);
            process.exitCode = ExitCode.NotFound;
          }
        },
        { readonly: true },
      );
      return;
    }
    if (opts.limit !== undefined && opts.limit > MAX_LIST_LIMIT)
      throw new UsageError(`--limit must be at most ${MAX_LIST_LIMIT} (got ${opts.limit}): page through the rest with --after.`);
    const page = await statusPage(opts, ctx, {
      ...(opts.limit === undefined ? {} : { limit: opts.limit }),
      ...(opts.after === undefined ? {} : { after: opts.after }),
    });
    if (opts.json) {
      ctx.out(JSON.stringify({ sessions: page.statuses, next: page.next }));
      return;
    }
    if (page.statuses.length === 0) ctx.out(opts.after ? 'no more sessions' : `no sessions in ${page.describe}`);
    for (const status of page.statuses) show(status);
    if (page.next) ctx.out(`more: sessiond status ... --after ${page.next}   (one line per session: sessiond ls)`);
  });
}

const iso = isoTime;

/** One open wait, with what ends it. */
function describeWait(sessionId: string, w: Wait): string {
  const since = `since ${iso(w.since)}`;
  switch (w.kind) {
    case 'approval':
      return `approval of call ${w.name}: ${w.tool} ${JSON.stringify(w.input ?? null).slice(0, 200)} ${since}; sessiond approve|deny ${sessionId} ${w.name} [--reason TEXT]`;
    case 'signal':
      return `signal ${w.name} ${since}${w.until === null ? '' : `, times out at ${iso(w.until)}`}; sessiond resolve ${sessionId} ${w.name} --data JSON`;
    case 'timer':
      return `timer ${w.name} ${since}, elapses at ${iso(w.until ?? w.since)}`;
    case 'session':
      return `session call ${w.name}: session ${w.child?.sessionId ?? '?'} (input ${w.child?.inputId ?? '?'}) ${since}${w.until === null ? '' : `, times out at ${iso(w.until)}`}; its answer comes when its turn ends (sessiond status ${w.child?.sessionId ?? ''})`;
  }
}

/** A status in plain words: one line, then pending inputs, tokens, waits and recovery. */
export function describeStatus(row: SessionStatus): string[] {
  const lease = row.owner
    ? row.leaseLive
      ? `owned by ${row.owner}, lease ${(row.leaseLeftMs / 1000).toFixed(1)} s left`
      : `owned by ${row.owner}, lease EXPIRED (awaiting recovery)`
    : 'no owner';
  const lines = [
    `${row.sessionId}: ${row.state} at seq ${row.seq}; ${lease}${row.phase ? `; phase ${row.phase}` : ''}${row.outcome ? `; last turn ${row.outcome}` : ''}`,
  ];
  const error = row.outcome === 'failed' ? row.execution?.error : null;
  if (error) lines.push(`  why     ${error.type === 'unknown' ? '' : `${error.type}: `}${boundText(oneLine(error.message), 300)}`);
  lines.push(
    `  pending inputs: ${
      row.pendingCount === 0
        ? 'none'
        : `${row.pendingCount} (${row.pendingBytes} bytes${row.pendingBlobBytes ? `, and ${row.pendingBlobBytes} bytes of images and files beside the log` : ''}): ${row.pending
            .slice(0, 20)
            .map((p) => `${p.inputId} (${p.delivery}${p.notBefore === undefined ? '' : `, not before ${iso(p.notBefore)}`})`)
            .join(', ')}${row.pendingCount > 20 ? `, and ${row.pendingCount - 20} more` : ''}`
    }`,
  );
  const tags = Object.entries(row.tags ?? {});
  if (tags.length > 0) lines.push(`  tags    ${tags.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (row.forkedFrom) lines.push(`  forked from ${row.forkedFrom.sessionId} at sequence ${row.forkedFrom.seq}`);
  if (row.calledBy) lines.push(`  called by ${row.calledBy} (its turn's session call; sessiond status ${row.calledBy})`);
  if (row.children?.length) lines.push(`  children ${row.children.join(', ')} (its turn waits on their turns)`);
  if (row.usage.inputTokens + row.usage.outputTokens > 0)
    lines.push(
      `  tokens  ${row.usage.inputTokens} in${row.usage.cachedInputTokens ? ` (${row.usage.cachedInputTokens} cached)` : ''}, ${row.usage.outputTokens} out${row.usage.reasoningTokens ? ` (${row.usage.reasoningTokens} reasoning)` : ''} (model steps and compactions, as the servers reported them)`,
    );
  const turn = row.execution?.usage;
  if (turn && turn.inputTokens + turn.outputTokens > 0)
    lines.push(`  this turn ${turn.inputTokens} in, ${turn.outputTokens} out${turn.costUsd === undefined ? '' : `, $${turn.costUsd}`}`);
  if (row.usage.costUsd !== undefined) lines.push(`  cost    $${row.usage.costUsd} (priced calls, --prices)`);
  const b = row.budget;
  if (b && (b.tokens !== null || b.costUsd !== null))
    lines.push(
      `  budget  ${[...(b.tokens === null ? [] : [`${b.spent.tokens} of ${b.tokens} tokens`]), ...(b.costUsd === null ? [] : [`$${b.spent.costUsd} of $${b.costUsd}`])].join(', ')} spent (sessiond budget ${row.sessionId})`,
    );
  const t = row.tenantBudget;
  if (t && row.ownedBy !== null)
    lines.push(
      `  tenant budget  ${[...(t.tokens === null ? [] : [`${t.spent.tokens} of ${t.tokens} tokens`]), ...(t.costUsd === null ? [] : [`$${t.spent.costUsd} of $${t.costUsd}`])].join(', ')} spent by ${row.ownedBy}'s sessions (sessiond budget --tenant ${row.ownedBy})`,
    );
  const decided = row.waits.filter((w) => w.outcome !== null);
  if (decided.length > 0)
    lines.push(
      `  decided in this turn: ${decided.map((w) => `${w.kind} ${w.name} ${w.outcome}${w.actor ? ` by ${w.actor}` : ''}${w.reason ? ` (${w.reason.slice(0, 100)})` : ''}`).join('; ')}`,
    );
  if (row.execution?.cancelledBy) lines.push(`  turn ${row.execution.id} cancelled by ${row.execution.cancelledBy}`);
  if (row.capacity) lines.push(`  WAITING for capacity: ${describeCapacityWait(row.capacity, iso)} (sessiond limits)`);
  const open = row.waits.filter((w) => w.outcome === null);
  if (open.length > 0) {
    lines.push(`  WAITING for ${open.length === 1 ? 'one thing' : `${open.length} things`} (the turn holds no lease; it resumes when the last one ends):`);
    for (const w of open) lines.push(`    ${describeWait(row.sessionId, w)}`);
  }
  const r = row.recovery;
  if (r)
    lines.push(
      `  recovery of ${r.executionId}: ${r.parked ? `PARKED after ${r.attempts} wake attempts: ${r.lastError?.message ?? ''}` : r.wakePending ? `wake owed (${r.attempts} attempts so far)` : 'woken'}`,
    );
  return lines;
}
