/**
 * The live bus on the embedded default: `startSessiond` (and `openEngine`) without NATS streams live
 * events in process, as a NATS worker does on its subjects: the text deltas of the turns it runs,
 * then every event it commits once with its seq; filters by session and by type (or family); a
 * subscriber that throws never reaches the turn.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { LiveEvent } from '../../src/events/live-bus.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

test('startSessiond without NATS: a subscriber hears the deltas of the answer and every committed event once, in order', async () => {
  const sessiond = await startSessiond({ db: tmp.file('live.db'), runner: echoRunner({ steps: 1 }) });
  try {
    const heard: LiveEvent[] = [];
    const other: LiveEvent[] = [];
    const sub = sessiond.subscribe({ sessionId: 'ses_live' }, (e) => heard.push(e));
    const otherSub = sessiond.subscribe({ sessionId: 'ses_else' }, (e) => other.push(e));
    await sessiond.admit('ses_live', { prompt: 'three small words' });
    await sessiond.awaitIdle('ses_live');
    sub.close();
    otherSub.close();

    const deltas = heard.filter((e) => e.type === 'text.delta');
    assert.ok(deltas.length >= 3, `one delta per word, got ${deltas.length}`);
    assert.is(deltas.map((e) => (e.payload as { delta: string }).delta).join(''), 'three small words');
    assert.ok(
      deltas.every((e) => e.seq === undefined),
      'deltas are live-only',
    );
    const committed = heard.filter((e) => e.seq !== undefined);
    const logged = await sessiond.engine.log.readSession('ses_live');
    assert.equal(
      committed.map((e) => [e.seq, e.type]),
      logged.map((e) => [e.seq, e.type]),
      'each committed event once, in order',
    );
    // the deltas came before the text they make up was committed
    const firstDelta = heard.indexOf(deltas[0]!);
    const completed = heard.findIndex((e) => e.type === 'text.completed');
    assert.ok(firstDelta < completed);
    assert.equal(other, [], 'another session hears nothing of it');
  } finally {
    await sessiond.close();
  }
});

test('filters by type and family; a subscriber that throws is reported and the turn goes on', async () => {
  const sessiond = await startSessiond({ db: tmp.file('filter.db'), runner: echoRunner({ steps: 1 }) });
  try {
    const types: string[] = [];
    const family: string[] = [];
    const errors: unknown[] = [];
    const a = sessiond.subscribe({ type: 'execution.settled' }, (e) => types.push(`${e.sessionId}:${e.type}`));
    const b = sessiond.subscribe({ sessionId: 'ses_f', type: 'text.*' }, (e) => family.push(e.type));
    const c = sessiond.subscribe(
      {},
      () => {
        throw new Error('a broken subscriber');
      },
      { onError: (err) => errors.push(err) },
    );
    await sessiond.admit('ses_f', { prompt: 'hi there' });
    await sessiond.awaitIdle('ses_f');
    assert.is((await sessiond.status('ses_f')).state, 'settled');
    for (const s of [a, b, c]) s.close();
    assert.equal(types, ['ses_f:execution.settled']);
    assert.ok(family.includes('text.delta') && family.includes('text.completed'), family.join());
    assert.ok(
      family.every((t) => t.startsWith('text.')),
      family.join(),
    );
    assert.ok(errors.length > 0 && errors.every((e) => (e as Error).message === 'a broken subscriber'));
    assert.throws(() => sessiond.subscribe({ sessionId: 'not an id' }, () => {}), /session id/);
  } finally {
    await sessiond.close();
  }
});

test.run();
