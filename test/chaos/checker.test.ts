/**
 * The fault suite's independent checker can fail: a clean log from a real engine passes, and each
 * kind of corruption of that log is caught by the check named after it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { check, fromSqliteRows, fromStreamMessage, type Check, type RawEvent } from '../../chaos/checker.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { encodeBatch } from '../../src/nats/stream.ts';
import { committed, type Proto } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';

async function cleanLog(): Promise<RawEvent[]> {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('clean.db'), runner: echoRunner({ steps: 2 }) });
  for (const p of ['one two', 'three four']) await engine.admit('ses_c', { prompt: p });
  await engine.awaitIdle('ses_c');
  await engine.cancel('ses_c'); // nothing to cancel: changes nothing
  const rows = engine.db.prepare('SELECT aggregate_id, seq, type, time, data FROM event ORDER BY position').all() as Parameters<
    typeof fromSqliteRows
  >[0] extends Iterable<infer R>
    ? R[]
    : never;
  await engine.close();
  tmp.remove();
  return fromSqliteRows(rows);
}

const checksOf = (events: RawEvent[], quiescent = true) => [...new Set(check(events, { quiescent }).map((f) => f.check))].sort();
const renumber = (events: RawEvent[]) => events.map((e, i) => ({ ...e, seq: i + 1 }));
const at = (events: RawEvent[], type: string, nth = 0) => events.map((e, i) => [e, i] as const).filter(([e]) => e.type === type)[nth]![1];

test('chaos checker - a clean log from a real engine has no findings, read from SQLite rows or stream messages', async () => {
  const events = await cleanLog();
  assert.ok(events.length > 10);
  assert.equal(check(events, { quiescent: true }), []);
  const asMessages = events.flatMap((e) =>
    fromStreamMessage(
      encodeBatch([committed({ type: e.type, payload: e.payload } as Proto, { id: `evt_${e.seq}`, sessionId: e.session, seq: e.seq, time: e.time })]),
    ),
  );
  assert.equal(asMessages, events, 'the stream layout decodes to the same events');
});

test('chaos checker - an input admitted with a wake and dropped unrun is not stranded', async () => {
  const events: RawEvent[] = [
    { session: 'ses_d', seq: 1, type: 'input.admitted', time: 1, payload: { inputId: 'inp_1', wake: true } },
    { session: 'ses_d', seq: 2, type: 'input.dropped', time: 2, payload: { inputIds: ['inp_1'] } },
  ];
  assert.equal(check(events, { quiescent: true }), []);
  assert.equal(checksOf(events.slice(0, 1)), ['nothing_stranded'], 'without the drop it is stranded');
});

test('chaos checker - each corruption is caught by its check', async () => {
  const clean = await cleanLog();
  const cases: [string, (e: RawEvent[]) => RawEvent[], Check[]][] = [
    ['a row lost', (e) => e.filter((_, i) => i !== at(e, 'text.completed')), ['fencing']],
    [
      'a second owner',
      (e) => {
        const i = at(e, 'step.started');
        const forged = {
          ...e[at(e, 'execution.claimed')]!,
          payload: { ...e[at(e, 'execution.claimed')]!.payload, executionId: 'exe_forged', ownerId: 'own_mallory' },
        };
        return renumber([...e.slice(0, i), forged, ...e.slice(i)]);
      },
      ['single_owner'],
    ],
    [
      'a write after the settle',
      (e) => {
        const settled = at(e, 'execution.settled');
        const late = { ...e[at(e, 'step.started')]!, seq: 0 };
        return renumber([...e.slice(0, settled + 1), late, ...e.slice(settled + 1)]);
      },
      ['lease'],
    ],
    ['a write past the lease', (e) => e.map((x) => (x.type === 'step.ended' ? { ...x, time: x.time + 10 * 60_000 } : x)), ['lease']],
    [
      'a promotion after a drop',
      (e) => {
        const i = at(e, 'input.promoted');
        const drop = { ...e[i]!, type: 'input.dropped', payload: { inputIds: [e[i]!.payload.inputId] } };
        return renumber([...e.slice(0, i), drop, ...e.slice(i)]);
      },
      ['promotion'],
    ],
    [
      'a drop of an input never admitted',
      (e) => {
        const i = at(e, 'input.promoted');
        return renumber([...e.slice(0, i), { ...e[i]!, type: 'input.dropped', payload: { inputIds: ['inp_ghost'] } }, ...e.slice(i)]);
      },
      ['promotion'],
    ],
    [
      'a double promotion',
      (e) => {
        const i = at(e, 'input.promoted');
        return renumber([...e.slice(0, i + 1), { ...e[i]! }, ...e.slice(i + 1)]);
      },
      ['promotion'],
    ],
    [
      'a recovery of a live lease, twice',
      (e) => {
        const i = at(e, 'step.started');
        const exe = e[i]!.payload.executionId;
        const rec = { ...e[i]!, type: 'recovery.started', payload: { executionId: exe } };
        return renumber([...e.slice(0, i), rec, rec, ...e.slice(i)]);
      },
      ['lease', 'nothing_stranded', 'recovery'],
    ],
    ['a prompt never run', (e) => renumber([...e, { ...e[0]!, payload: { ...e[0]!.payload, inputId: 'inp_lost', wake: true } }]), ['nothing_stranded']],
    ['an execution never ended', (e) => e.slice(0, at(e, 'execution.settled', 1)), ['nothing_stranded']],
  ];
  for (const [what, corrupt, expected] of cases) {
    assert.equal(checksOf(corrupt(clean)), expected, what);
  }
  assert.equal(checksOf(clean.slice(0, at(clean, 'execution.settled', 1)), false), [], 'liveness is judged only on a quiescent log');
});

test.run();
