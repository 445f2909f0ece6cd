import { writeFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadCallLimits, maxModelCalls, mergeCallLimits, parseCallLimits, scopesOf } from '../../src/capacity/limits-file.ts';
import { tempDir } from '../support/tmp.ts';

const refused = (json: unknown, ...parts: string[]) => {
  try {
    parseCallLimits(json, 'limits.json');
  } catch (err) {
    const message = (err as Error).message;
    assert.ok(message.startsWith('limits.json: '), message);
    for (const p of parts) assert.ok(message.includes(p), `${message} names ${p}`);
    assert.ok(message.includes('A limits file looks like'), 'says what a good file looks like');
    return;
  }
  assert.unreachable(`${JSON.stringify(json)} was accepted`);
};

test('limits - the documented file parses as written, every part optional', () => {
  const doc = { models: { 'gpt-4o': 4, '*': 8 }, providers: { 'https://api.openai.com/v1': 16 }, tenants: { acme: 2, '*': 4 } };
  assert.equal(parseCallLimits(doc, 'f'), doc);
  assert.equal(parseCallLimits({}, 'f'), {});
  assert.equal(parseCallLimits({ tenants: { acme: 1 } }, 'f'), { tenants: { acme: 1 } });
});

test('limits - refuses an unknown key, a non-object part, and zero, negative, fractional or non-number limits, naming the entry', () => {
  refused({ model: { x: 1 } }, 'unknown key "model"', '"models"');
  refused([], 'JSON object');
  refused({ models: 3 }, '"models" must be an object');
  refused({ models: { 'gpt-4o': 0 } }, '"models"."gpt-4o" is 0', '1 or more');
  refused({ tenants: { acme: -2 } }, '"tenants"."acme" is -2');
  refused({ providers: { p: 1.5 } }, '"providers"."p" is 1.5');
  refused({ models: { m: '4' } }, '"models"."m" is "4"');
  refused({ models: { '': 4 } }, 'empty name');
});

test('limits - a file that is not JSON or not there is refused with its name', () => {
  const tmp = tempDir();
  try {
    writeFileSync(tmp.file('bad.json'), '{ "models": { "a": 1, } }');
    assert.throws(
      () => loadCallLimits(tmp.file('bad.json')),
      (e: Error) => e.message.includes('bad.json: not JSON'),
    );
    assert.throws(
      () => loadCallLimits(tmp.file('none.json')),
      (e: Error) => e.message.includes('cannot read the limits file'),
    );
    writeFileSync(tmp.file('ok.json'), '{ "models": { "*": 2 } }');
    assert.equal(loadCallLimits(tmp.file('ok.json')), { models: { '*': 2 } });
  } finally {
    tmp.remove();
  }
});

test('limits - --max-model-calls N is {"models": {"*": N}}; merging keeps the stricter of each entry', () => {
  assert.equal(maxModelCalls(3), { models: { '*': 3 } });
  assert.throws(() => maxModelCalls(0), /--max-model-calls/);
  assert.equal(mergeCallLimits({ models: { '*': 8, a: 2 }, tenants: { t: 3 } }, maxModelCalls(4)), { models: { '*': 4, a: 2 }, tenants: { t: 3 } });
  assert.equal(mergeCallLimits({}, {}), {});
});

test('limits - scopesOf: the entry of its own name, else "*"; a limit per name; no tenant draws from no tenant limit', () => {
  const limits = parseCallLimits({ models: { 'gpt-4o': 4, '*': 8 }, providers: { 'https://api.openai.com/v1': 16 }, tenants: { acme: 2, '*': 4 } }, 'f');
  assert.equal(scopesOf(limits, { provider: 'https://api.openai.com/v1', model: 'gpt-4o', tenant: 'acme' }), [
    { scope: 'model:gpt-4o', limit: 4 },
    { scope: 'provider:https://api.openai.com/v1', limit: 16 },
    { scope: 'tenant:acme', limit: 2 },
  ]);
  assert.equal(scopesOf(limits, { provider: 'http://local', model: 'llama', tenant: 'beta' }), [
    { scope: 'model:llama', limit: 8 },
    { scope: 'tenant:beta', limit: 4 },
  ]);
  assert.equal(scopesOf(limits, { provider: 'http://local', model: 'llama', tenant: null }), [{ scope: 'model:llama', limit: 8 }]);
  assert.equal(scopesOf({}, { provider: 'p', model: 'm', tenant: 't' }), []);
});

test.run();
