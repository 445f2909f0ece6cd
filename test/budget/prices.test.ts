/**
 * Price tables: a call's cost from its usage (cached input and reasoning at their own prices, or
 * at input's and output's), and a bad table refused at start naming the entry and what to fix.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { checkPrices, costOf } from '../../src/budget/prices.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

test('prices - a call is priced per million tokens; cached input and reasoning default to input and output', () => {
  const prices = checkPrices({ a: { input: 2, cachedInput: 1, output: 8, reasoning: 4 }, b: { input: 2, output: 8 } });
  const usage = { inputTokens: 1000, cachedInputTokens: 400, outputTokens: 500, reasoningTokens: 100 };
  assert.is(costOf(prices, 'a', usage), (600 * 2 + 400 * 1 + 400 * 8 + 100 * 4) / 1e6);
  assert.is(costOf(prices, 'b', usage), (1000 * 2 + 500 * 8) / 1e6);
  assert.is(costOf(prices, 'c', usage), undefined, 'a model without a price costs nothing known');
  assert.is(costOf(undefined, 'a', usage), undefined);
});

test('prices - a bad table is refused naming the entry and what to write', () => {
  const refused = (raw: unknown): string => {
    try {
      checkPrices(raw, 'prices.json');
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`accepted ${JSON.stringify(raw)}`);
  };
  assert.match(refused({ 'gpt-x': { input: -1, output: 1 } }), 'prices.json: model "gpt-x" input: -1 is not a number >= 0');
  assert.match(refused({ 'gpt-x': { input: 1, output: 1, cached: 1 } }), 'unknown key "cached" (known: input, cachedInput, output, reasoning)');
  assert.match(refused({ 'gpt-x': { input: 1 } }), '"output" is missing');
  assert.match(refused([1]), 'expected an object of models');
  assert.match(refused({ 'gpt-x': { input: '1', output: 1 } }), 'input: "1" is not a number >= 0');
});

test('prices - sessiond start refuses a prices file that does not parse, or names a negative price, before it starts', async () => {
  const tmp = tempDir();
  try {
    const broken = tmp.file('broken.json');
    writeFileSync(broken, '{"gpt-x": {"input": 1,');
    let r = await runCli(['start', '--db', tmp.file('w.db'), '--prices', broken]);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, `--prices ${broken} is not valid JSON`);
    const negative = tmp.file('negative.json');
    writeFileSync(negative, JSON.stringify({ 'gpt-x': { input: 1, output: -3 } }));
    r = await runCli(['start', '--db', tmp.file('w.db'), '--prices', negative]);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, 'model "gpt-x" output: -3 is not a number >= 0');
  } finally {
    tmp.remove();
  }
});

test.run();
