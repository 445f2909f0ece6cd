/**
 * `sessiond limits [--db FILE | --nats URL] [--json]`: the deployment's limits on model calls as
 * the workers keep them (src/capacity/): each limit in force (the strictest any live worker
 * declares), the calls in flight and waiting under it, the calls waiting (oldest first), and the
 * providers the fleet backs off from. Reads only: the SQLite file read-only, or the NATS bucket.
 */
import type { Command } from 'commander';
import { isoTime, systemClock } from '../../clock.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openExisting, type LogOptions } from '../log-options.ts';
import { describeNats, natsConnectionOptions } from '../nats-options.ts';
import { connectNats } from '../../nats/connection.ts';
import { sqliteCapacityStore } from '../../capacity/sqlite-capacity-store.ts';
import { jetstreamCapacityStore } from '../../capacity/kv-capacity-store.ts';
import { readCapacity, type CapacityView } from '../../capacity/gate.ts';

type LimitsOptions = LogOptions & { json?: boolean };

export function registerLimits(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('limits')
      .description("the deployment's limits on model calls: each limit, the calls in flight and waiting, and the providers backed off from")
      .option('--json', 'print it as JSON'),
    ctx,
  ).action(async (opts: LimitsOptions) => {
    const { view, where } = await readView(opts, ctx);
    if (opts.json) {
      ctx.out(JSON.stringify(view));
      return;
    }
    for (const line of describeLimits(view, where, systemClock.now())) ctx.out(line);
  });
}

async function readView(opts: LimitsOptions, ctx: CliContext): Promise<{ view: CapacityView; where: string }> {
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-limits');
  if (nats) {
    const nc = await connectNats(nats);
    try {
      const store = await jetstreamCapacityStore(nc);
      try {
        return { view: await readCapacity(store, systemClock.now()), where: `NATS ${describeNats(nats)}` };
      } finally {
        await store.close();
      }
    } finally {
      await nc.close();
    }
  }
  const db = openExisting(opts.db);
  try {
    const store = sqliteCapacityStore(db);
    return { view: await readCapacity(store, systemClock.now()), where: opts.db };
  } finally {
    db.close();
  }
}

/** The view in plain words. */
export function describeLimits(view: CapacityView, where: string, now: number): string[] {
  if (view.workers.length === 0)
    return [`no limits on model calls in force in ${where}: no live worker declares one (sessiond start --max-model-calls N, or --limits FILE)`];
  const lines = [
    `limits on model calls in ${where} (${view.workers.length} live worker${view.workers.length === 1 ? '' : 's'}; the strictest of theirs applies):`,
  ];
  if (view.limits.length === 0) lines.push('  none in use yet: no call has drawn from a limit');
  const width = Math.max(...view.limits.map((l) => l.scope.length), 0);
  for (const l of view.limits) lines.push(`  ${l.scope.padEnd(width)}  ${l.inFlight} of ${l.limit} in flight, ${l.waiting} waiting`);
  if (view.waiting.length > 0) {
    lines.push(`waiting (${view.waiting.length}, oldest first):`);
    for (const w of view.waiting.slice(0, 50))
      lines.push(
        `  ${w.sessionId}  ${w.executionId}${w.tenant ? `  tenant ${w.tenant}` : ''}  for ${((now - w.since) / 1000).toFixed(1)} s  ${w.scopes.join(', ')}`,
      );
    if (view.waiting.length > 50) lines.push(`  and ${view.waiting.length - 50} more (--json lists them all)`);
  }
  for (const b of view.backoff.filter((x) => x.until > now))
    lines.push(`backing off from ${b.provider} until ${isoTime(b.until)} (it answered 429; level ${b.level})`);
  return lines;
}
