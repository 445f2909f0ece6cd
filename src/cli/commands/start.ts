import type { Command } from 'commander';
import { openEngine } from '../../engine.ts';
import { startWorker } from '../../execution/worker.ts';
import { loadRunner } from '../../runner/load.ts';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_MS, type Notice } from '../../execution/session-execution.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import type { CliContext } from '../context.ts';
import { nonNegativeInt, positiveInt } from '../options.ts';

interface StartOptions { db: string; runner: string; leaseMs: number; heartbeatMs: number; echoDelayMs: number }

export function registerStart(program: Command, ctx: CliContext): void {
  program
    .command('start')
    .description('run a worker until SIGINT/SIGTERM: it claims sessions with pending prompts and runs them')
    .option('--db <file>', 'SQLite database file', ctx.defaultDb)
    .option('--runner <echo|path>', 'runner: "echo" or a module exporting a runner function', 'echo')
    .option('--lease-ms <n>', 'lease length in ms', positiveInt('--lease-ms'), DEFAULT_LEASE_MS)
    .option('--heartbeat-ms <n>', 'lease renewal interval in ms', positiveInt('--heartbeat-ms'), DEFAULT_HEARTBEAT_MS)
    .option('--echo-delay-ms <n>', 'pause per step of the echo runner, in ms', nonNegativeInt('--echo-delay-ms'), 0)
    .action(async (opts: StartOptions) => {
      const runner = await loadRunner(opts.runner, { delayMs: opts.echoDelayMs });
      const engine = await openEngine({ file: opts.db, runner, leaseMs: opts.leaseMs, heartbeatMs: opts.heartbeatMs, onNotice: (n) => ctx.out(describeNotice(n)) });
      const worker = startWorker(engine.execution, { onEvent: (e) => { const line = describeEvent(e); if (line) ctx.out(line); } });
      ctx.out(`sessiond worker ${engine.ownerId} is running on ${opts.db} with the ${opts.runner} runner`);
      ctx.out(`  lease ${opts.leaseMs / 1000} s, renewed every ${opts.heartbeatMs / 1000} s. Stop it with Ctrl-C.`);
      ctx.out(`  send it a prompt from another terminal:  npx sessiond prompt ses_demo "hello there" --db ${opts.db}`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          ctx.out(`${signal}: stopping; turns in progress are handed back`);
          resolve();
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      const running = Object.values(engine.execution.registry.getSnapshot().context.runs).filter((r) => r.executionId).length;
      await worker.stop();
      await engine.close();
      ctx.out(`stopped (${running === 0 ? 'nothing was running' : `handed back ${running} running session${running === 1 ? '' : 's'}`})`);
    });
}

export function describeNotice(n: Notice): string {
  switch (n.type) {
    case 'claimed': return `${n.sessionId}  claimed (execution ${n.executionId})`;
    case 'settled': return `${n.sessionId}  turn ${n.outcome}${n.error ? `: ${n.error}` : ''}`;
    case 'claim_lost': return `${n.sessionId}  lost its claim on execution ${n.executionId}; stopped the runner`;
    case 'cancelled': return `${n.sessionId}  cancelled execution ${n.executionId}`;
    case 'refused': return `${n.sessionId}  not taken: ${n.message}`;
    case 'error': return `${n.sessionId}  error: ${n.message}`;
  }
}

export function describeEvent(e: SessionEvent): string | undefined {
  switch (e.type) {
    case 'input.admitted': return `${e.sessionId}  prompt admitted (${e.payload.delivery}): ${JSON.stringify(e.payload.prompt.slice(0, 80))}`;
    case 'text.completed': return `${e.sessionId}  ${e.payload.text}`;
    case 'execution.cancelled': return `${e.sessionId}  execution ${e.payload.executionId} was cancelled`;
    default: return undefined;
  }
}
