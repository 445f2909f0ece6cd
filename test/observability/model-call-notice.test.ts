/**
 * A worker's model calls reach `onNotice` (and its duration histogram) as `model_call` notices, but
 * its log does not print one line per model call.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond } from '../../src/host.ts';
import type { Notice } from '../../src/execution/session-execution.ts';
import type { Runner } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';

test('model_call notices go to onNotice, not to the worker log', async () => {
  const tmp = tempDir();
  const lines: string[] = [];
  const notices: Notice[] = [];
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await (await ctx.modelCall({ provider: 'openai', model: 'gpt-4o' })).release();
    await ctx.endStep(messageId, 'stop', { inputTokens: 1, outputTokens: 1 }, 'gpt-4o');
  };
  const host = await startSessiond({
    db: tmp.file('n.db'),
    runner,
    report: { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) },
    onNotice: (n) => {
      if ('type' in n) notices.push(n as Notice);
    },
  });
  try {
    await host.engine.admit('ses_n', { prompt: 'one call' });
    await host.engine.awaitIdle('ses_n');
    const call = notices.find((n) => n.type === 'model_call');
    assert.ok(call, `a model_call notice among ${notices.map((n) => n.type).join(', ')}`);
    assert.equal(
      { ...call, durationMs: 0 },
      {
        type: 'model_call',
        sessionId: 'ses_n',
        executionId: (call as { executionId: string }).executionId,
        provider: 'openai',
        model: 'gpt-4o',
        responseModel: 'gpt-4o',
        durationMs: 0,
      },
    );
    assert.ok(
      lines.some((l) => l.includes('ses_n  claimed')),
      `the log says the claim: ${lines.join(' | ')}`,
    );
    assert.not.ok(
      lines.some((l) => l.includes('model call')),
      `no line per model call: ${lines.join(' | ')}`,
    );
  } finally {
    await host.close();
    tmp.remove();
  }
});

test.run();
