/**
 * The NATS flags shared by `sessiond start` and `sessiond prompt`, parsed once: `--nats <url>[,...]`
 * (SESSIOND_NATS; none: embedded SQLite), `--nats-user`, `--nats-pass` (SESSIOND_NATS_USER,
 * SESSIOND_NATS_PASS: prefer the variable, flags show in `ps`). A bad value is a usage error naming
 * the flag; the password is never printed.
 */
import type { Command } from 'commander';
import { isSessiondError, messageOf, UsageError } from '../errors.ts';
import { inboxPrefixOf, parseConnectionOptions, type NatsConnectionOptions } from '../nats/connection.ts';
import { DEFAULT_REPLY_PREFIX } from '../nats/command-service.ts';
import type { CliContext } from './context.ts';

export interface NatsFlags {
  nats?: string;
  natsUser?: string;
  natsPass?: string;
}

/** `sessiond start`'s flags for the command service's own connection. */
export interface NatsCommandFlags {
  natsCommandsUser?: string;
  natsCommandsPass?: string;
  replyInboxes?: string;
}

const FLAG_OF: Record<string, string> = { servers: '--nats', user: '--nats-user', pass: '--nats-pass' };

/** Adds --nats, --nats-user and --nats-pass to a command; `role` names the nats.conf user to suggest. */
export function addNatsOptions(command: Command, ctx: CliContext, role: 'worker' | 'client' | 'observer' | 'admin'): Command {
  return command
    .option(
      '--nats <url>',
      `use NATS JetStream at this URL (e.g. nats://127.0.0.1:4222) instead of the SQLite log${ctx.defaultNats ? '' : '; default SESSIOND_NATS'}`,
      ctx.defaultNats,
    )
    .option('--nats-user <user>', `NATS user (nats.conf: ${role}); default SESSIOND_NATS_USER`)
    .option('--nats-pass <pass>', 'NATS password; default SESSIOND_NATS_PASS (safer than the flag)');
}

/** Connection options from the flags and environment, or undefined when --nats is not given. */
export function natsConnectionOptions(flags: NatsFlags, ctx: CliContext, name: string): NatsConnectionOptions | undefined {
  const servers = flags.nats?.trim();
  const user = flags.natsUser ?? (ctx.env.SESSIOND_NATS_USER || undefined);
  const pass = flags.natsPass ?? (ctx.env.SESSIOND_NATS_PASS || undefined);
  if (!servers) {
    if (flags.natsUser !== undefined || flags.natsPass !== undefined) {
      throw new UsageError('--nats-user and --nats-pass only apply with --nats <url> (or SESSIOND_NATS): add the server URL.');
    }
    return undefined;
  }
  if ((user === undefined) !== (pass === undefined)) {
    throw new UsageError(
      user === undefined
        ? '--nats-pass needs --nats-user (or SESSIOND_NATS_USER): give both or neither.'
        : `--nats-user ${user} needs a password: pass --nats-pass or set SESSIOND_NATS_PASS.`,
    );
  }
  const options: NatsConnectionOptions = { servers, name, ...(user !== undefined ? { user, pass } : {}) };
  try {
    parseConnectionOptions(options);
  } catch (err) {
    const option = isSessiondError(err) ? String(err.details.option ?? '') : '';
    throw new UsageError(`${FLAG_OF[option] ?? '--nats'}: ${messageOf(err)}`);
  }
  return options;
}

/** Adds the command connection's flags to `sessiond start`. */
export function addNatsCommandOptions(command: Command): Command {
  return command
    .option('--nats-commands-user <user>', 'NATS user that serves sessiond.cmd.* (nats.conf: commands); default SESSIOND_NATS_COMMANDS_USER')
    .option('--nats-commands-pass <pass>', 'its password; default SESSIOND_NATS_COMMANDS_PASS')
    .option('--reply-inboxes <prefixes>', 'comma-separated inbox prefixes command replies may go to (default _INBOX_client)');
}

/**
 * The command service's connection, from the flags and environment: undefined when the worker runs
 * with a NATS user but no commands user (it then serves no commands). A server without users gets a
 * second connection without a user, replying to plain `_INBOX` inboxes.
 */
export { describeNats } from '../nats/connection.ts';

export function natsCommandConnection(
  flags: NatsCommandFlags,
  worker: NatsConnectionOptions,
  ctx: CliContext,
): { connection: NatsConnectionOptions; replyPrefixes: string[] } | undefined {
  const user = flags.natsCommandsUser ?? (ctx.env.SESSIOND_NATS_COMMANDS_USER || undefined);
  const pass = flags.natsCommandsPass ?? (ctx.env.SESSIOND_NATS_COMMANDS_PASS || undefined);
  if ((user === undefined) !== (pass === undefined)) {
    throw new UsageError(
      user === undefined
        ? '--nats-commands-pass needs --nats-commands-user (or SESSIOND_NATS_COMMANDS_USER): give both or neither.'
        : `--nats-commands-user ${user} needs a password: pass --nats-commands-pass or set SESSIOND_NATS_COMMANDS_PASS.`,
    );
  }
  if (user !== undefined && user === worker.user) {
    throw new UsageError(
      `--nats-commands-user must not be the worker's user (${user}): command replies would go out with the right to write the log. Use the commands user of nats.conf.`,
    );
  }
  const replyPrefixes = flags.replyInboxes
    ?.split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  if (user === undefined && worker.user !== undefined) return undefined;
  const connection: NatsConnectionOptions = { servers: worker.servers!, name: 'sessiond-commands', ...(user !== undefined ? { user, pass } : {}) };
  return { connection, replyPrefixes: replyPrefixes ?? [user === undefined ? inboxPrefixOf(undefined) : DEFAULT_REPLY_PREFIX] };
}
