/**
 * Tracing's cost per turn: echo turns on the embedded engine with no tracer provider (what a worker
 * with no OTEL_* runs: the API's no-ops) beside the same turns with the SDK registered and spans
 * exported over OTLP http/protobuf to a local sink (what OTEL_EXPORTER_OTLP_ENDPOINT turns on),
 * alternated in the same run, rounds of turns one after another.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { percentile } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import type { Section } from '../lib/context.ts';

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
