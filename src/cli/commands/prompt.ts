import type { Command } from 'commander';
import { openDatabase } from '../../storage/sqlite.ts';
import { migrate } from '../../storage/migrate.ts';
import { SqliteEventLog } from '../../storage/sqlite-event-log.ts';
import { CommandHandler } from '../../execution/command-handler.ts';
import { admitInput } from '../../input/admit.ts';
import { systemClock } from '../../clock.ts';
import { randomIds } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { oneOf } from '../options.ts';

export function registerPrompt(program: Command, ctx: CliContext): void {
  program
    .command('prompt')
    .description('admit a prompt into a session; a running worker picks it up')
    .argument('<session>', 'session id')
    .argument('<text>', 'the prompt')
    .option('--db <file>', 'SQLite database file', ctx.defaultDb)
    .option('--delivery <steer|queue>', 'steer joins the running turn; queue waits for the next', oneOf('--delivery', ['steer', 'queue'] as const), 'queue')
    .option('--id <inputId>', 'input id (idempotency key); generated when absent')
    .option('--no-wake', 'admit without waking the session')
    .action(async (session: string, text: string, opts: { db: string; delivery: 'steer' | 'queue'; id?: string; wake: boolean }) => {
      const db = openDatabase(opts.db);
      migrate(db);
      const log = new SqliteEventLog(db);
      try {
        const handler = new CommandHandler(log, systemClock, randomIds);
        const receipt = await admitInput(handler, session, { prompt: text, delivery: opts.delivery, wake: opts.wake, ...(opts.id ? { id: opts.id } : {}) });
        ctx.out(`${receipt.created ? 'admitted' : 'already admitted'} ${receipt.inputId} to ${session} at sequence ${receipt.admittedSeq} (${opts.delivery})`);
        ctx.out(receipt.wake ? 'a running worker (sessiond start) will pick it up' : 'not woken (--no-wake): it waits until the session is woken');
      } finally {
        await log.close();
        db.close();
      }
    });
}
