/**
 * Parallel tool calls: a model step asking for 8 calls of 50 ms each, on the embedded engine with
 * the model runner against the local OpenAI-compatible server, takes about one call's time; the
 * batch is journaled in one append. Alternated in the same run: the same step with the calls one
 * at a time (maxParallelTools 1), and a step with a single call (the single-tool path).
 */
import { join } from 'node:path';
import { z } from 'zod';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { DraftEvent } from '../../src/events/envelope.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { spyLog } from '../../test/support/spy-log.ts';
import { percentile } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import type { Section } from '../lib/context.ts';

const S = 'parallel-tools';
const CALL_MS = 50;
const CALLS = 8;
const ROUNDS = 10;

const tools = {
  work: defineTool({
    description: `takes ${CALL_MS} ms`,
    inputSchema: z.object({ n: z.number() }),
    execute: async ({ n }) => {
      await new Promise((r) => setTimeout(r, CALL_MS));
      return n;
    },
  }),
};

interface Setup {
  engine: Engine;
  journals: number[];
}

async function setup(dir: string, name: string, server: FakeOpenAI, maxParallelTools: number): Promise<Setup> {
  const file = join(dir, `${name}.db`);
  const db = openDatabase(file);
  migrate(db);
  const journals: number[] = [];
  const log = spyLog(new SqliteEventLog(db), {
    beforeAppend: (drafts: DraftEvent[]) => {
      const called = drafts.filter((d) => d.type === 'tool.called').length;
      if (called > 0) journals.push(called);
    },
  });
  const engine = await openEngine({ file, log, runner: openaiRunner({ model: 'fake-model', baseURL: server.url, tools, maxParallelTools }) });
  return { engine, journals };
}

/** One turn: a step with `calls` tool calls, then a short answer; its time from admission to idle. */
async function turn(s: Setup, server: FakeOpenAI, sessionId: string, calls: number): Promise<number> {
  server.script(
    { kind: 'toolCalls', calls: Array.from({ length: calls }, (_, i) => ({ id: `call_${i}`, name: 'work', arguments: { n: i } })) },
    { kind: 'text', text: 'done' },
  );
  const t = performance.now();
  await s.engine.admit(sessionId, { prompt: 'work' });
  await s.engine.awaitIdle(sessionId);
  return performance.now() - t;
}

export const parallelTools: Section = {
  name: S,
  title: `parallel tool calls: a step of ${CALLS} calls of ${CALL_MS} ms, at once and one at a time, beside a step of one call`,
  async run(ctx) {
    const server = await startFakeOpenAI();
    const parallel = await setup(ctx.tmp, 'parallel-tools', server, CALLS);
    const serial = await setup(ctx.tmp, 'serial-tools', server, 1);
    const times = { batch: [] as number[], serial: [] as number[], single: [] as number[], singleSerial: [] as number[] };
    try {
      for (let r = 0; r < ROUNDS; r++) {
        times.batch.push(await turn(parallel, server, `ses_batch_${r}`, CALLS));
        times.serial.push(await turn(serial, server, `ses_serial_${r}`, CALLS));
        times.single.push(await turn(parallel, server, `ses_single_${r}`, 1));
        times.singleSerial.push(await turn(serial, server, `ses_single_${r}`, 1));
        say(S, `${r + 1}/${ROUNDS} rounds`);
      }
    } finally {
      await parallel.engine.close();
      await serial.engine.close();
      await server.close();
    }
    const p50 = (xs: number[]) => percentile(xs, 50);
    const batchJournals = parallel.journals.filter((n) => n === CALLS).length;
    ctx.results.add(
      {
        key: 'tools.parallel.batch',
        section: S,
        figure: `a step of ${CALLS} calls of ${CALL_MS} ms at once, turn p50`,
        unit: 'ms',
        value: p50(times.batch),
        raw: { label: 'a step of one call', value: p50(times.single), unit: 'ms' },
        note: `${ROUNDS} turns each, alternated; the same ${CALLS} calls one at a time: ${p50(times.serial).toFixed(0)} ms p50; ${batchJournals} of ${ROUNDS} batches journaled in one append`,
      },
      { maxRatio: 2 },
    );
    ctx.results.add({
      key: 'tools.parallel.single',
      section: S,
      figure: 'a step of one call, turn p50 (maxParallelTools 8)',
      unit: 'ms',
      value: p50(times.single),
      raw: { label: 'the same with maxParallelTools 1', value: p50(times.singleSerial), unit: 'ms' },
      note: 'the single-tool path with and without the slots, alternated',
    });
  },
};
