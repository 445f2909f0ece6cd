/**
 * `sessiond prompt SESSION TEXT`: admits a prompt. Embedded (default): straight into the SQLite log,
 * and a running worker picks it up. With `--nats <url>`: sent as an `admit` command on
 * `sessiond.cmd.admit`, answered by one running worker.
 */
import type { Command } from 'commander';
import { openDatabase } from '../../storage/sqlite.ts';
import { migrate } from '../../storage/migrate.ts';
import { SqliteEventLog } from '../../storage/sqlite-event-log.ts';
import { CommandHandler } from '../../execution/command-handler.ts';
import { admitInput, type AdmitReceipt, type AdmitRequest } from '../../input/admit.ts';
import { systemClock } from '../../clock.ts';
import { randomIds, validateId } from '../../ids.ts';
import { SessiondClient } from '../../nats/client.ts';
import type { CliContext } from '../context.ts';
import { oneOf } from '../options.ts';
import { addNatsOptions, natsConnectionOptions, type NatsFlags } from '../nats-options.ts';

interface PromptOptions extends NatsFlags { db: string; delivery: 'steer' | 'queue'; id?: string; wake: boolean }

export function registerPrompt(program: Command, ctx: CliContext): void {
  const command = program
    .command('prompt')
    .description('admit a prompt into a session; a running worker picks it up')
    .argument('<session>', 'session id')
    .argument('<text>', 'the prompt')
    .option('--db <file>', 'SQLite database file (without --nats)', ctx.defaultDb)
    .option('--delivery <steer|queue>', 'steer joins the running turn; queue waits for the next', oneOf('--delivery', ['steer', 'queue'] as const), 'queue')
    .option('--id <inputId>', 'input id (idempotency key); generated when absent')
    .option('--no-wake', 'admit without waking the session');
  addNatsOptions(command, ctx, 'client').action(async (session: string, text: string, opts: PromptOptions) => {
    validateId(session, 'session id');
    const request: AdmitRequest = { prompt: text, delivery: opts.delivery, wake: opts.wake, ...(opts.id ? { id: opts.id } : {}) };
    const nats = natsConnectionOptions(opts, ctx, 'sessiond-prompt');
    const receipt = nats ? await admitOverNats(nats, session, request) : await admitEmbedded(opts.db, session, request);
    ctx.out(`${receipt.created ? 'admitted' : 'already admitted'} ${receipt.inputId} to ${session} at sequence ${receipt.admittedSeq} (${opts.delivery})`);
    if (!receipt.wake) ctx.out('not woken (--no-wake): it waits until the session is woken');
    else ctx.out(nats ? 'a worker took the command and woke the session' : 'a running worker (sessiond start) will pick it up');
  });
}

async function admitEmbedded(file: string, session: string, request: AdmitRequest): Promise<AdmitReceipt> {
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  try {
    return await admitInput(new CommandHandler(log, systemClock, randomIds), session, request);
  } finally {
    await log.close();
    db.close();
  }
}

async function admitOverNats(connection: NonNullable<ReturnType<typeof natsConnectionOptions>>, session: string, request: AdmitRequest): Promise<AdmitReceipt> {
  const client = await SessiondClient.connect({ connection });
  try {
    return await client.admit(session, request);
  } finally {
    await client.close();
  }
}
