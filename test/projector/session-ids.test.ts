import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { Projector } from '../../src/projector/projector.ts';
import { sessionRows } from '../../src/projector/queries.ts';
import { tempDir } from '../support/tmp.ts';

test('projector - input ids are per session: two sessions may both use inp_1', async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('ids.db'), runner: echoRunner({ steps: 1 }) });
  for (const s of ['ses_a', 'ses_b']) {
    await engine.admit(s, { id: 'inp_1', prompt: `hello ${s}` });
    await engine.awaitIdle(s);
  }
  const projector = new Projector(engine.db);
  projector.apply(await engine.log.readAll());
  for (const s of ['ses_a', 'ses_b']) {
    const rows = sessionRows(engine.db, s);
    assert.equal(
      rows.inputs.map((i) => [i.id, i.prompt, i.promoted_seq !== null]),
      [['inp_1', `hello ${s}`, true]],
    );
    assert.equal(
      rows.messages.filter((m) => m.type === 'user').map((m) => [m.id, JSON.parse(m.data).prompt]),
      [['inp_1', `hello ${s}`]],
    );
  }
  await engine.close();
  tmp.remove();
});

test.run();
