// Deployment shapes on one machine, for bench/README.md's multi-core question: N whole-worker
// processes (startSessiond), 64/N sessions each, the turn-ceiling turn (one step, three durable tool
// calls), the sessions' turns all at once. Not part of `npm run bench` (it measures no target).
//
//   npx tsx bench/deployments.ts shared 2    two processes on one SQLite file
//   npx tsx bench/deployments.ts own 2       two processes, a SQLite file each (sessions split)
//   npx tsx bench/deployments.ts nats 2      two processes on one nats-server it starts
//
// TURNS (default 4000) sets the turns in all; prints turns per second together and worker CPU per turn.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSessiond } from '../src/host.ts';
import { startNatsServer, setupStreams, WORKER } from '../src/testing/nats-server.ts';
import type { Runner } from '../src/runner/types.ts';

const toolTurn: Runner = async (ctx) => {
  const { messageId } = await ctx.startStep();
  for (let k = 0; k < 3; k++) await ctx.tool(messageId, { name: 'lookup', input: { k }, durable: true }, async () => 'x'.repeat(100));
  await ctx.endStep(messageId, 'stop');
};
const SESSIONS = 64;
interface ChildResult {
  ms: number;
  turns: number;
  cpuMs: number;
}

async function child([file, tag, count, per, url]: string[]): Promise<void> {
  const host = await startSessiond({
    db: file!,
    runner: toolTurn,
    report: { out: () => {}, err: () => {} },
    ...(url ? { nats: { connection: { servers: url, ...WORKER } } } : {}),
  });
  const sessions = Array.from({ length: Number(count) }, (_, k) => `ses_${tag}${k}`);
  const turn = async (s: string) => {
    await host.engine.admit(s, { prompt: 'look three things up' });
    await host.engine.awaitIdle(s);
  };
  await Promise.all(sessions.map(turn)); // warm: every session exists, every statement prepared
  process.send!('ready');
  await new Promise((r) => process.once('message', r));
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    sessions.map(async (s) => {
      for (let r = 0; r < Number(per); r++) await turn(s);
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const result: ChildResult = { ms: performance.now() - t0, turns: sessions.length * Number(per), cpuMs: (cpu.user + cpu.system) / 1000 };
  process.send!(result);
  await host.close();
  process.exit(0);
}

async function main(mode: string, n: number): Promise<void> {
  if (!['shared', 'own', 'nats'].includes(mode) || !(n >= 1 && SESSIONS % n === 0)) {
    throw new Error(`usage: tsx bench/deployments.ts shared|own|nats N (N divides ${SESSIONS}); got ${mode} ${n}`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'sessiond-deployments-'));
  const server = mode === 'nats' ? await startNatsServer() : undefined;
  try {
    if (server) await setupStreams(server.url);
    const per = Math.ceil(Number(process.env.TURNS ?? 4000) / SESSIONS);
    process.stdout.write(`${mode} x${n}: starting ${n} whole worker(s), ${SESSIONS / n} sessions each, ${per} turns per session...\n`);
    const kids = Array.from({ length: n }, (_, i) =>
      fork(
        new URL(import.meta.url).pathname,
        ['child', join(dir, mode === 'shared' ? 'shared.db' : `w${i}.db`), `p${i}_`, String(SESSIONS / n), String(per), ...(server ? [server.url] : [])],
        {
          execArgv: ['--import', 'tsx'],
        },
      ),
    );
    await Promise.all(kids.map((k) => new Promise((r) => k.once('message', r))));
    const results = kids.map((k) => new Promise<ChildResult>((r) => k.once('message', r as never)));
    const t0 = performance.now();
    for (const k of kids) k.send('go');
    const done = await Promise.all(results);
    const ms = performance.now() - t0;
    const turns = done.reduce((a, d) => a + d.turns, 0);
    const cpu = done.reduce((a, d) => a + d.cpuMs, 0);
    process.stdout.write(`${mode} x${n}: ${((turns / ms) * 1000).toFixed(0)} turns/s together, worker CPU ${(cpu / turns).toFixed(2)} ms per turn\n`);
    await Promise.all(kids.map((k) => new Promise((r) => k.once('exit', r))));
  } finally {
    await server?.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv.slice(3));
else await main(process.argv[2] ?? 'shared', Number(process.argv[3] ?? 2));
