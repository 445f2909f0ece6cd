/**
 * `sessiond inspect`: the inspector (state chart, conversation, timeline, time travel) over a log
 * at rest or a running fleet, read-only and taking no work: no worker, no claims, no sweep, nothing
 * appended. `--db FILE` opens an existing database read-only (never created or migrated); `--nats
 * URL` reads the stream as the given user (nats.conf's observer may; it can send no commands).
 * Binds 127.0.0.1 unless `--host` says otherwise; the inspector's host check answers only requests
 * addressed to it.
 */
import type { Command } from 'commander';
import { messageOf } from '../../errors.ts';
import { DEFAULT_INSPECTOR_HOST, startInspector } from '../../inspector/server.ts';
import type { CliContext } from '../context.ts';
import { openLog, type LogOptions } from '../log-options.ts';
import { addNatsOptions } from '../nats-options.ts';
import { port } from '../options.ts';

export const DEFAULT_INSPECT_PORT = 4600;

interface InspectOptions extends LogOptions {
  port: number;
  host: string;
}

export function registerInspect(program: Command, ctx: CliContext): void {
  const command = program
    .command('inspect')
    .description('serve the inspector read-only over a log at rest (--db FILE) or a running fleet (--nats URL); takes no work')
    .option('--db <file>', 'an existing SQLite database (opened read-only)', ctx.defaultDb)
    .option('--port <port>', 'port to serve on', port('--port'), DEFAULT_INSPECT_PORT)
    .option('--host <address>', 'address to bind (127.0.0.1: this machine only)', DEFAULT_INSPECTOR_HOST);
  addNatsOptions(command, ctx, 'observer').action(async (opts: InspectOptions) => {
    // listen for Ctrl-C before anything else, so an early one still stops cleanly
    const stop = new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    const opened = await openLog(opts, ctx, { readonly: true });
    try {
      const inspector = await startInspector({
        log: opened.log,
        port: opts.port,
        host: opts.host,
        onError: (err) => ctx.err(`sessiond inspect: ${messageOf(err)}`),
      });
      ctx.out(`sessiond inspector on ${inspector.url} (read-only: it takes no work and writes nothing)`);
      ctx.out(`  over ${opened.describe}`);
      ctx.out("  sessions with live state, each one's state chart, conversation, timeline and time travel. Stop it with Ctrl-C.");
      const signal = await stop;
      await inspector.close();
      ctx.out(`${signal}: inspector stopped`);
    } finally {
      await opened.close();
    }
  });
}
