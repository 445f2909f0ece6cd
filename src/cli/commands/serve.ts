/**
 * `sessiond serve --http PORT`: the HTTP and SSE gateway (docs/gateway.md). Embedded: the whole
 * worker of `sessiond start` with the gateway in its process (`start --http` is the same). `--nats
 * URL` (as the client user): the gateway alone in front of the workers, taking no work; a worker flag
 * given is refused, naming it.
 */
import { Command as CommanderCommand, type Command } from 'commander';
import { UsageError, messageOf } from '../../errors.ts';
import { SessiondClient } from '../../client/client.ts';
import { startGateway, type Gateway } from '../../gateway/server.ts';
import { natsLive } from '../../gateway/live.ts';
import type { CliContext } from '../context.ts';
import { addGatewayOptions, gatewayLine, gatewayOptions } from '../gateway-options.ts';
import { addNatsOptions, describeNats, natsConnectionOptions } from '../nats-options.ts';
import { addWorkerOptions, runWorker, type StartOptions } from './start.ts';

export function registerServe(program: Command, ctx: CliContext): void {
  const command = addWorkerOptions(
    program
      .command('serve')
      .description(
        'serve sessions over HTTP and SSE: embedded, a worker with the gateway in its process; with --nats (as the client user), the gateway alone in front of the workers',
      ),
    ctx,
  );
  addGatewayOptions(command, true).action(async (opts: StartOptions) => {
    if (!opts.nats && !ctx.defaultNats) return runWorker(opts, ctx);
    const workerOnly = workerFlagsGiven(command, ctx);
    if (workerOnly.length > 0)
      throw new UsageError(
        `${workerOnly.join(', ')}: worker flags do not apply to sessiond serve --nats (the gateway takes no work); give them to sessiond start, or leave them out.`,
      );
    await serveNats(opts, ctx);
  });
}

/**
 * The flags given on the command line (or by the environment) that only a worker reads: every flag
 * of `serve` but the NATS connection's (as the client user) and the gateway's.
 */
function workerFlagsGiven(command: Command, ctx: CliContext): string[] {
  const flagsOf = (probe: Command) => probe.options.map((o) => o.long);
  const kept = new Set([...flagsOf(addNatsOptions(new CommanderCommand(), ctx, 'client')), ...flagsOf(addGatewayOptions(new CommanderCommand(), true))]);
  return command.options
    .filter((o) => !kept.has(o.long))
    .filter((o) => ['cli', 'env'].includes(command.getOptionValueSource(o.attributeName()) ?? ''))
    .map((o) => o.long ?? o.flags);
}

async function serveNats(opts: StartOptions, ctx: CliContext): Promise<void> {
  const connection = natsConnectionOptions(opts, ctx, 'sessiond-gateway')!;
  const gateway = gatewayOptions(opts, ctx);
  ctx.out(`connecting to NATS at ${describeNats(connection)}...`);
  const client = await SessiondClient.connect({ connection: { ...connection, waitForServer: true } });
  let served: Gateway;
  try {
    served = await startGateway({ ...gateway, sessions: client, live: natsLive(client), onError: (err) => ctx.err(`sessiond: gateway: ${messageOf(err)}`) });
  } catch (err) {
    await client.close();
    throw err;
  }
  ctx.out(`sessiond gateway is running in front of NATS ${describeNats(connection)} (it takes no work: the workers run the turns). Stop it with Ctrl-C.`);
  ctx.out(gatewayLine(served.url, gateway.tokens, gateway.tokensFrom, gateway.jwt));
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  ctx.out('stopping: the event streams end (their clients reconnect), then the NATS connection closes');
  await served.close();
  await client.close();
  ctx.out('stopped');
  process.exit(process.exitCode ?? 0);
}
