/**
 * Tracing's cost per turn. First, echo turns on the embedded engine with no tracer provider (what a
 * worker with no OTEL_* runs) beside the same turns with the SDK registered and spans exported over
 * OTLP http/protobuf to a local sink (what OTEL_EXPORTER_OTLP_ENDPOINT turns on), alternated in the
 * same run. Then the whole worker (`startSessiond`, the turn-ceiling section's tool turns, 64
 * sessions) with no provider in three span modes alternated (src/observability/tracing.ts
 * `setSpanMode`): `auto` (what ships: no span built without a provider), `always` (every call
 * through the API's no-ops: what tracing cost before) and `never` (no tracing call at all).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { openEngine, type Engine } from '../../src/engine.ts';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { setSpanMode, type SpanMode } from '../../src/observability/tracing.ts';
import { percentile } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';

const S = 'tracing';
const ROUNDS = 8;
const TURNS = 25;

async function round(engine: Engine, label: string, r: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < TURNS; i++) {
    const id = `ses_${label}_${r}_${i}`;
    await engine.admit(id, { prompt: 'hello there' });
    await engine.awaitIdle(id);
  }
  return (performance.now() - t) / TURNS;
}

/** One step with three durable tool calls, each returning ~100 bytes (the turn-ceiling section's turn). */
const toolTurn: Runner = async (ctx) => {
  const { messageId } = await ctx.startStep();
  for (let k = 0; k < 3; k++) await ctx.tool(messageId, { name: 'lookup', input: { k }, durable: true }, async () => 'x'.repeat(100));
  await ctx.endStep(messageId, 'stop');
};

const MODES: SpanMode[] = ['auto', 'always', 'never'];
const WORKER_ROUNDS = 5;
const WORKER_TURNS = 1_280;

/** The whole worker, no provider registered, in each span mode alternated: turns/s and CPU ms per turn of each round. */
async function workerModes(ctx: Ctx): Promise<Record<SpanMode, { rate: number[]; cpu: number[] }>> {
  const silent = { out: () => undefined, err: () => undefined };
  const host = await startSessiond({ db: join(ctx.tmp, 'tracing-worker.db'), runner: toolTurn, report: silent });
  const out = Object.fromEntries(MODES.map((m) => [m, { rate: [] as number[], cpu: [] as number[] }])) as Record<SpanMode, { rate: number[]; cpu: number[] }>;
  const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_t${k}`);
  const turn = async (s: string) => {
    await host.engine.admit(s, { prompt: 'look three things up' });
    await host.engine.awaitIdle(s);
  };
  try {
    trace.disable();
    await Promise.all(sessions.map(turn)); // warm up
    const per = Math.ceil(WORKER_TURNS / CONCURRENCY);
    for (let r = 0; r < WORKER_ROUNDS; r++) {
      // each round starts with another mode: none always runs on the warmest (or coldest) machine
      for (let k = 0; k < MODES.length; k++) {
        const mode = MODES[(r + k) % MODES.length]!;
        setSpanMode(mode);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await Promise.all(
          sessions.map(async (s) => {
            for (let i = 0; i < per; i++) await turn(s);
          }),
        );
        const ms = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        out[mode].rate.push((per * CONCURRENCY * 1000) / ms);
        out[mode].cpu.push((cpu.user + cpu.system) / 1000 / (per * CONCURRENCY));
      }
      say(S, `whole worker: ${r + 1}/${WORKER_ROUNDS} rounds of the three span modes`);
    }
  } finally {
    setSpanMode('auto');
    await host.close();
  }
  return out;
}

export const tracing: Section = {
  name: S,
  title: `tracing: echo turns with no OTEL_* beside the same with spans exported (OTLP http/protobuf to a local sink), alternated`,
  async run(ctx) {
    let received = 0;
    const sink = createServer((req, res) => {
      req.on('data', (d: Buffer) => (received += d.length));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/v1/traces`;
    const engine = await openEngine({ file: join(ctx.tmp, 'tracing.db'), runner: echoRunner({ delayMs: 0 }) });
    const times = { off: [] as number[], on: [] as number[] };
    try {
      for (let r = 0; r < ROUNDS; r++) {
        trace.disable();
        times.off.push(await round(engine, 'off', r));
        const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))] });
        trace.setGlobalTracerProvider(provider);
        times.on.push(await round(engine, 'on', r));
        await provider.shutdown();
        trace.disable();
        say(S, `${r + 1}/${ROUNDS} rounds`);
      }
    } finally {
      trace.disable();
      await engine.close();
      sink.closeAllConnections();
      await new Promise((r) => sink.close(r));
    }
    const p50 = (xs: number[]) => percentile(xs, 50);
    const cost = p50(times.on) - p50(times.off);
    const modes = await workerModes(ctx);
    const rounds = (xs: number[]) => xs.map((x) => Math.round(x)).join(', ');
    for (const mode of MODES) {
      const m = modes[mode];
      ctx.results.add({
        key: `tracing.worker.${mode}`,
        section: S,
        figure: `whole worker turns, one step + 3 durable tools, ${CONCURRENCY} sessions, no OTEL_*, span mode ${mode}, median of rounds`,
        unit: 'turns/s',
        value: p50(m.rate),
        ...(mode === 'never' ? {} : { raw: { label: 'the same with no tracing call (span mode never)', value: p50(modes.never.rate), unit: 'turns/s' } }),
        note: `${WORKER_ROUNDS} rounds of ${WORKER_TURNS} turns alternated with the other modes: ${rounds(m.rate)} turns/s; CPU ${p50(m.cpu).toFixed(3)} ms a turn (median)`,
      });
    }
    ctx.results.add({
      key: 'tracing.turn',
      section: S,
      figure: 'an echo turn with spans exported over OTLP, p50 of rounds',
      unit: 'ms',
      value: p50(times.on),
      raw: { label: 'the same turn with no OTEL_* (no SDK loaded)', value: p50(times.off), unit: 'ms' },
      note: `${ROUNDS} rounds of ${TURNS} turns each way, alternated: ${cost.toFixed(2)} ms per turn for export; ${Math.round(received / 1024)} KiB of OTLP sent`,
    });
  },
};
