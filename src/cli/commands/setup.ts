/**
 * `sessiond setup --nats <url> --nats-user admin`: creates the events stream, or brings an existing
 * one to the settings this version needs (deny purge and delete, duplicate window, replicas). Workers
 * may create the stream but never reconfigure it (nats.conf), so an upgrade that changes the stream
 * is done once by an operator with this command.
 */
import type { Command } from 'commander';
import { jetstreamManager } from '@nats-io/jetstream';
import { millis } from '@nats-io/transport-node';
import { connectNats } from '../../nats/connection.ts';
import { ensureEventStream, DEFAULT_DUPLICATE_WINDOW_MS, DEFAULT_REPLICAS } from '../../nats/stream.ts';
import { ensureSnapshotStream } from '../../nats/snapshot-store.ts';
import type { CliContext } from '../context.ts';
import { UsageError } from '../exit.ts';
import { positiveInt } from '../options.ts';
import { addNatsOptions, describeNats, natsConnectionOptions, type NatsFlags } from '../nats-options.ts';

interface SetupOptions extends NatsFlags { replicas: number; duplicateWindowMs: number }

export function registerSetup(program: Command, ctx: CliContext): void {
  addNatsOptions(program
    .command('setup')
    .description('create the JetStream events stream or update it to the settings sessiond needs (run as the admin user)')
    .option('--replicas <n>', 'stream replicas: 1 on one server, 3 in a cluster', positiveInt('--replicas'), DEFAULT_REPLICAS)
    .option('--duplicate-window-ms <n>', 'deduplication window of appends, in ms', positiveInt('--duplicate-window-ms'), DEFAULT_DUPLICATE_WINDOW_MS), ctx, 'admin')
    .action(async (opts: SetupOptions) => {
      const nats = natsConnectionOptions(opts, ctx, 'sessiond-setup');
      if (!nats) throw new UsageError('setup configures the NATS stream: give --nats <url> (or SESSIOND_NATS) and the admin user.');
      const nc = await connectNats(nats);
      try {
        const jsm = await jetstreamManager(nc);
        const info = await ensureEventStream(jsm, { replicas: opts.replicas, duplicateWindowMs: opts.duplicateWindowMs, ...(nc.info?.version ? { serverVersion: nc.info.version } : {}) });
        // the snapshots beside it (a cache of the log) get the same replicas: they stay readable while a server is down
        await ensureSnapshotStream(jsm, opts.replicas);
        const c = info.config;
        ctx.out(`stream ${c.name} on ${describeNats(nats)} is ready: subjects ${c.subjects.join(', ')}, ${c.num_replicas} replica${c.num_replicas === 1 ? '' : 's'}, duplicate window ${millis(c.duplicate_window)} ms, deny purge ${c.deny_purge}, deny delete ${c.deny_delete}; ${info.state.messages} messages`);
      } finally {
        await nc.close();
      }
    });
}
