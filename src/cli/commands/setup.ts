/**
 * `sessiond setup --nats <url> --nats-user admin`: creates the events, snapshot and audit streams, the
 * KV buckets and the blob bucket (Object Store SESSIOND_BLOBS), or
 * brings existing ones to sessiond's settings and refuses what cannot change in place (workers only
 * verify); `--tenant NAME` prints a tenant's nats.conf user (why: docs/nats.md#the-events-stream).
 */
import type { Command } from 'commander';
import { millis } from '@nats-io/transport-node';
import { connectNats, requireJetStream } from '../../nats/connection.ts';
import {
  setupEventStream,
  fencesReplicated,
  CLUSTER_REPLICAS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_REPLICAS,
  REPLICATED_FENCING_SINCE,
  type StreamSetup,
} from '../../nats/stream.ts';
import { setupSnapshotStream } from '../../nats/snapshot-store.ts';
import { setupAuditStream } from '../../nats/deletion-stream.ts';
import { BLOB_BUCKET, setupBlobBucket } from '../../nats/object-blob-store.ts';
import { CAPACITY_BUCKET, setupCapacityBucket } from '../../capacity/kv-capacity-store.ts';
import { BUDGETS_BUCKET, setupBudgetsBucket } from '../../budget/kv-tenant-budget-store.ts';
import { VERB_SCOPES, newPassword, tenantUserBlock } from '../../nats/tenant-user.ts';
import type { CliContext } from '../context.ts';
import { UsageError } from '../../errors.ts';
import { parseScopes, type Scope } from '../../gateway/scopes.ts';
import { commandVerbs } from '../../nats/subjects.ts';
import { positiveInt } from '../options.ts';
import { addNatsOptions, describeNats, natsConnectionOptions, type NatsFlags } from '../nats-options.ts';

interface SetupOptions extends NatsFlags {
  replicas?: number;
  duplicateWindowMs: number;
  tenant?: string;
  tenantPassword?: string;
  tenantScopes?: string;
  tenantUser?: string;
}

/** What setup did to one stream, in words. */
function describeSetup(s: StreamSetup): string {
  if (s.created && s.changed.length > 0) return `recreated (it differed: ${s.changed.map((d) => `${d.setting} ${d.have}`).join(', ')})`;
  if (s.created) return 'created';
  if (s.changed.length > 0) return `changed ${s.changed.map((d) => `${d.setting} ${d.have} -> ${d.want}`).join(', ')}`;
  return 'unchanged';
}

export function registerSetup(program: Command, ctx: CliContext): void {
  addNatsOptions(
    program
      .command('setup')
      .description(
        'create the JetStream streams (events, snapshots, audit), KV buckets and blob bucket or bring them to the settings sessiond needs (run as the admin user, before the workers)',
      )
      .option(
        '--replicas <n>',
        `stream replicas (default: ${CLUSTER_REPLICAS} for a new stream on a JetStream cluster, ${DEFAULT_REPLICAS} on one server; an existing stream keeps its own)`,
        positiveInt('--replicas'),
      )
      .option('--duplicate-window-ms <n>', 'deduplication window of appends, in ms', positiveInt('--duplicate-window-ms'), DEFAULT_DUPLICATE_WINDOW_MS)
      .option('--tenant <name>', 'print the nats.conf user of this tenant (its own sessions only) instead of setting up streams; it connects to nothing')
      .option('--tenant-password <password>', 'the password of the --tenant user (default: a new random one)')
      .option('--tenant-scopes <list>', 'the commands the --tenant user may send, as scopes: read,prompt,approve,manage (default: every command)')
      .option('--tenant-user <name>', "the --tenant user's name (default tenant-NAME): one tenant may have several users, each with its scopes"),
    ctx,
    'admin',
  ).action(async (opts: SetupOptions) => {
    if (opts.tenant !== undefined) {
      const scopes = opts.tenantScopes === undefined ? undefined : tenantScopes(opts.tenantScopes);
      try {
        ctx.out(tenantUserBlock(opts.tenant, opts.tenantPassword ?? newPassword(), scopes, opts.tenantUser).trimEnd());
      } catch (err) {
        throw new UsageError(`--tenant: ${(err as Error).message}`);
      }
      return;
    }
    if (opts.tenantPassword !== undefined || opts.tenantScopes !== undefined || opts.tenantUser !== undefined)
      throw new UsageError('--tenant-password, --tenant-scopes and --tenant-user go with --tenant NAME.');
    const nats = natsConnectionOptions(opts, ctx, 'sessiond-setup');
    if (!nats) throw new UsageError('setup configures the NATS streams: give --nats <url> (or SESSIOND_NATS) and the admin user.');
    const nc = await connectNats(nats);
    try {
      // a server without JetStream is refused at once; each request below is asked again while JetStream does not answer
      const jsm = await requireJetStream(nc);
      const clustered = Boolean(nc.info?.cluster);
      // a cluster whose servers do not fence appends on replicated streams gets 1 replica by default (more is refused there)
      const fenced = fencesReplicated(nc.info?.version);
      if (clustered && opts.replicas === undefined && !fenced) {
        ctx.out(
          `note: nats-server ${nc.info?.version ?? '(version unknown)'} does not fence appends on replicated streams: new streams get ${DEFAULT_REPLICAS} replica (nats-server ${REPLICATED_FENCING_SINCE} or newer for ${CLUSTER_REPLICAS})`,
        );
      }
      const common = {
        replicas: opts.replicas,
        newReplicas: clustered && fenced ? CLUSTER_REPLICAS : DEFAULT_REPLICAS,
        ...(nc.info?.version ? { serverVersion: nc.info.version } : {}),
      };
      // the snapshots first: a cache, recreated when it differs (it might capture the events' subjects)
      const snapshots = await setupSnapshotStream(jsm, common);
      const events = await setupEventStream(jsm, { ...common, manage: true, duplicateWindowMs: opts.duplicateWindowMs });
      const audit = await setupAuditStream(jsm, common);
      const c = events.info.config;
      // model-call limits shared by the workers (src/capacity/): as many replicas as the events stream
      const capacity = await setupCapacityBucket(nc, { replicas: c.num_replicas });
      const budgets = await setupBudgetsBucket(nc, { replicas: c.num_replicas });
      // payloads too large for an event, referenced from the log: as many replicas as the events stream
      const blobs = await setupBlobBucket(jsm, { replicas: c.num_replicas, serverVersion: nc.info?.version });
      const blobReplicas = blobs.info.config.num_replicas;
      ctx.out(
        `stream ${c.name} ${describeSetup(events)}; stream ${snapshots.info.config.name} ${describeSetup(snapshots)}; stream ${audit.info.config.name} ${describeSetup(audit)}; KV bucket ${CAPACITY_BUCKET} ${capacity.created ? 'created' : 'unchanged'}; KV bucket ${BUDGETS_BUCKET} ${budgets.created ? 'created' : 'unchanged'}`,
      );
      ctx.out(
        `blob bucket ${BLOB_BUCKET} (Object Store, stream ${blobs.info.config.name}: prompt parts and tool results too large for an event) ${describeSetup(blobs)}: ${blobReplicas} replica${blobReplicas === 1 ? '' : 's'}, ${blobs.info.state.bytes} bytes in ${blobs.info.state.messages} messages`,
      );
      ctx.out(
        `stream ${c.name} on ${describeNats(nats)} is ready: subjects ${c.subjects.join(', ')}, ${c.num_replicas} replica${c.num_replicas === 1 ? '' : 's'}, duplicate window ${millis(c.duplicate_window)} ms, deny purge ${c.deny_purge}, deny delete ${c.deny_delete}; ${events.info.state.messages} messages`,
      );
      if (c.deny_purge) {
        ctx.out(
          `note: stream ${c.name} was created by an older sessiond with deny purge, which nats-server will not lift on an existing stream: workers run on it, but \`sessiond delete --nats\` and \`retain --nats\` cannot delete sessions from it (a stream created by this setup can)`,
        );
      }
      if (clustered && fenced && opts.replicas === undefined && (c.num_replicas === 1 || snapshots.info.config.num_replicas === 1)) {
        ctx.out(
          `hint: the server is in a JetStream cluster but a stream has 1 replica (events ${c.num_replicas}, snapshots ${snapshots.info.config.num_replicas}): run \`sessiond setup --replicas ${CLUSTER_REPLICAS}\` to survive a server going down`,
        );
      }
    } finally {
      await nc.close();
    }
  });
}

/** `--tenant-scopes read,prompt` as scopes; a list that allows no command is refused, saying so. */
function tenantScopes(list: string): ReadonlySet<Scope> {
  let scopes: ReadonlySet<Scope>;
  try {
    scopes = parseScopes(list.split(',').map((x) => x.trim()));
  } catch (err) {
    throw new UsageError(`--tenant-scopes ${list}: ${(err as Error).message}.`);
  }
  if (!commandVerbs.some((verb) => scopes.has(VERB_SCOPES[verb])))
    throw new UsageError(
      `--tenant-scopes ${list} allows no command: give read (status, list), prompt (admit, wake), approve (resolve) or manage (cancel, drop, tag, fork).`,
    );
  return scopes;
}
