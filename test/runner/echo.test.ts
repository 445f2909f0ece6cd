/** The built-in echo runner, through a real engine on a temporary SQLite file. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { tempDir } from '../support/tmp.ts';

test('echo runner - a prompt with fewer words than steps records no empty "echo: " text', async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('echo.db'), runner: echoRunner({ steps: 3 }) });
  await engine.admit('ses_e', { prompt: 'hi' });
  await engine.awaitIdle('ses_e');
  const texts = (await engine.log.readSession('ses_e')).flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : []));
  assert.equal(texts, ['echo: hi'], 'one text, with the word');
  const steps = (await engine.log.readSession('ses_e')).filter((e) => e.type === 'step.ended').length;
  assert.is(steps, 3, 'the steps still run');
  await engine.close();
  tmp.remove();
});

test.run();
