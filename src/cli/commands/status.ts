import type { Command } from 'commander';
import { hydrate } from '../../machines/decider.ts';
import { sessionView } from '../../machines/session-view.ts';
import { ExitCode } from '../exit.ts';
import { validateId } from '../../ids.ts';
import { systemClock } from '../../clock.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';

export function registerStatus(program: Command, ctx: CliContext): void {
  addLogOptions(program
    .command('status')
    .description('state, owner, lease left, phase, pending inputs and recovery of one session (or all)')
    .argument('[session]', 'session id (all sessions when absent)')
    .option('--json', 'one JSON object per session'), ctx)
    .action(async (session: string | undefined, opts: LogOptions & { json?: boolean }) => {
      if (session !== undefined) validateId(session, 'session id');
      const opened = await openLog(opts, ctx, { readonly: true });
      try {
        const bySession = new Map<string, SessionEvent[]>();
        const events = session ? await opened.log.readSession(session) : await opened.log.readAll();
        for (const e of events) (bySession.get(e.sessionId) ?? bySession.set(e.sessionId, []).get(e.sessionId)!).push(e);
        if (session && bySession.size === 0) {
          ctx.out(opts.json ? JSON.stringify({ sessionId: session, state: 'unknown', seq: 0 }) : `${session}: no such session (no events in ${opened.describe})`);
          process.exitCode = ExitCode.NotFound;
          return;
        }
        const now = systemClock.now();
        for (const [id, list] of bySession) {
          const row = sessionView(hydrate(id, list), now);
          if (opts.json) { ctx.out(JSON.stringify(row)); continue; }
          const lease = row.owner ? (row.leaseLive ? `owned by ${row.owner}, lease ${(row.leaseLeftMs / 1000).toFixed(1)} s left` : `owned by ${row.owner}, lease EXPIRED (awaiting recovery)`) : 'no owner';
          ctx.out(`${id}: ${row.state} at seq ${row.seq}; ${lease}${row.phase ? `; phase ${row.phase}` : ''}${row.outcome ? `; last turn ${row.outcome}` : ''}`);
          ctx.out(`  pending inputs: ${row.pendingCount === 0 ? 'none' : `${row.pendingCount} (${row.pendingBytes} bytes): ${row.pending.slice(0, 20).map((p) => `${p.inputId} (${p.delivery})`).join(', ')}${row.pendingCount > 20 ? `, and ${row.pendingCount - 20} more` : ''}`}`);
          if (row.usage.inputTokens + row.usage.outputTokens > 0) ctx.out(`  tokens  ${row.usage.inputTokens} in, ${row.usage.outputTokens} out (model steps and compactions, as the servers reported them)`);
          const r = row.recovery;
          if (r) ctx.out(`  recovery of ${r.executionId}: ${r.parked ? `PARKED after ${r.attempts} wake attempts: ${r.lastError?.message ?? ''}` : r.wakePending ? `wake owed (${r.attempts} attempts so far)` : 'woken'}`);
        }
      } finally {
        await opened.close();
      }
    });
}
