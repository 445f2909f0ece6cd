/**
 * The NATS flags shared by `sessiond start` and `sessiond prompt`, parsed once:
 *
 *   --nats <url>         NATS server(s), comma-separated (default: SESSIOND_NATS); absent = embedded SQLite
 *   --nats-user <user>   (default: SESSIOND_NATS_USER)
 *   --nats-pass <pass>   (default: SESSIOND_NATS_PASS; prefer the variable, flags show up in `ps`)
 *
 * `natsConnectionOptions` turns them into connection options, or undefined when NATS is not used.
 * A bad value is a usage error naming the flag; the password is never printed.
 */
import type { Command } from 'commander';
import { isSessiondError, messageOf } from '../errors.ts';
import { parseConnectionOptions, type NatsConnectionOptions } from '../nats/connection.ts';
import type { CliContext } from './context.ts';
import { UsageError } from './exit.ts';

export interface NatsFlags {
  nats?: string;
  natsUser?: string;
  natsPass?: string;
}

const FLAG_OF: Record<string, string> = { servers: '--nats', user: '--nats-user', pass: '--nats-pass' };

/** Adds --nats, --nats-user and --nats-pass to a command; `role` names the nats.conf user to suggest. */
export function addNatsOptions(command: Command, ctx: CliContext, role: 'worker' | 'client'): Command {
  return command
    .option('--nats <url>', `use NATS JetStream at this URL (e.g. nats://127.0.0.1:4222) instead of the SQLite log${ctx.defaultNats ? '' : '; default SESSIOND_NATS'}`, ctx.defaultNats)
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
    throw new UsageError(user === undefined
      ? '--nats-pass needs --nats-user (or SESSIOND_NATS_USER): give both or neither.'
      : `--nats-user ${user} needs a password: pass --nats-pass or set SESSIOND_NATS_PASS.`);
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

/** The URL(s) to show; never the password. */
export function describeNats(options: NatsConnectionOptions): string {
  const servers = Array.isArray(options.servers) ? options.servers.join(', ') : options.servers ?? '';
  return `${servers}${options.user ? ` as user ${options.user}` : ''}`;
}
