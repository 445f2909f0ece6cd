/**
 * What a browser watching each session costs the worker, and how soon it sees an event: full turns of
 * 64 sessions at once on an embedded worker with the gateway in its process (`sessiond serve`),
 * first with no stream open (the baseline, in the same run), then with one SSE stream per session
 * reading every event, committed and live (`GET /v1/sessions/:id/events`). Figures: turns/s with the
 * streams as a ratio to turns/s without; events/s the streams delivered; the delay from an event's
 * commit time to its arrival at the reader, p50 and p99 (the event's time is the worker's clock in
 * ms, the reader's is the same process's). Every committed event must reach its stream, or the
 * section fails.
 */
import { join } from 'node:path';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { readSse, type SseReader } from '../../test/support/sse.ts';
import { turn as echoTurn } from './turns.ts';
import { percentile, perSecond } from '../lib/measure.ts';
import { fmt, say, ticker } from '../lib/report.ts';
import { CONCURRENCY, type Section } from '../lib/context.ts';
import { onCleanup } from '../lib/cleanup.ts';

const S = 'gateway';

export const gatewayStreams: Section = {
  name: S,
  title: 'the gateway: turns/s with an SSE stream per session vs none, events/s delivered, commit-to-browser delay',
  async run(ctx) {
    const host = await startSessiond({ db: join(ctx.tmp, 'gateway.db'), runner: echoRunner() });
    const gateway = await startGateway({ sessions: host, live: engineLive(host), port: 0 });
    const streams: SseReader[] = [];
    const release = onCleanup('gateway worker', async () => {
      for (const s of streams) s.close();
      await gateway.close();
      await host.close();
    });
    try {
      const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_gw${k}`);
      const turn = (id: string) => echoTurn(host.engine, id);
      const rounds = ctx.sizes.turnRounds;
      const run = async (label: string): Promise<number> => {
        let done = 0;
        const tick = ticker();
        const t0 = performance.now();
        await Promise.all(
          sessions.map(async (id) => {
            for (let r = 0; r < rounds; r++) {
              await turn(id);
              done++;
              tick(() => say(S, `${label}: ${fmt(done)}/${fmt(rounds * CONCURRENCY)} turns`));
            }
          }),
        );
        return perSecond(rounds * CONCURRENCY, performance.now() - t0);
      };
      await Promise.all(sessions.map(turn)); // warm up: first claims, caches
      const without = await run('no streams');

      const heads = await Promise.all(sessions.map((id) => host.engine.log.lastSeq(id)));
      const delays: number[] = [];
      for (const [i, id] of sessions.entries()) {
        const reader = await readSse(new URL(`/v1/sessions/${id}/events`, gateway.url).href, { headers: { 'last-event-id': String(heads[i]) } });
        if (reader.status !== 200) throw new Error(`the stream of ${id} answered ${reader.status}`);
        streams.push(reader);
      }
      const t0 = performance.now();
      const withStreams = await run(`${CONCURRENCY} streams open`);
      const turnsMs = performance.now() - t0;
      const lasts = await Promise.all(sessions.map((id) => host.engine.log.lastSeq(id)));
      const deadline = Date.now() + 30_000;
      const lastSeqOf = (r: SseReader) => {
        for (let k = r.frames.length - 1; k >= 0; k--) if (r.frames[k]!.id) return Number(r.frames[k]!.id);
        return 0;
      };
      while (streams.some((r, i) => lastSeqOf(r) < lasts[i]!)) {
        if (Date.now() > deadline) throw new Error('a stream did not get every committed event within 30 s of the last turn');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      let committed = 0;
      let live = 0;
      for (const r of streams) {
        for (const f of r.frames) {
          if (f.id) committed++;
          else if (f.json?.type) live++;
          if (typeof f.json?.time === 'number') delays.push(f.arrivedAt - (f.json.time as number));
        }
      }
      const expected = lasts.reduce((sum, v, i) => sum + v - heads[i]!, 0);
      if (committed !== expected) throw new Error(`the streams got ${committed} committed events of ${expected}`);
      ctx.results.add(
        {
          key: 'gateway.turns.ratio',
          section: S,
          figure: `full turns/s with an SSE stream per session (${CONCURRENCY}) / without`,
          unit: 'x',
          value: withStreams / without,
          note: `${fmt(withStreams)} turns/s with the streams, ${fmt(without)} without (the same worker, this run); embedded, the gateway in the worker's process`,
        },
        { min: 0.5 },
      );
      ctx.results.add({
        key: 'gateway.events',
        section: S,
        figure: 'events delivered to the streams',
        unit: 'events/s',
        value: perSecond(committed + live, turnsMs),
        note: `${fmt(committed)} committed (every one), ${fmt(live)} live deltas, over ${fmt(turnsMs)} ms of turns`,
      });
      ctx.results.add({ key: 'gateway.delay.p50', section: S, figure: 'commit to the stream reader, p50', unit: 'ms', value: percentile(delays, 50) });
      ctx.results.add({ key: 'gateway.delay.p99', section: S, figure: 'commit to the stream reader, p99', unit: 'ms', value: percentile(delays, 99) });
    } finally {
      release();
      for (const s of streams) s.close();
      await gateway.close();
      await host.close();
    }
  },
};
