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
import waitingRunner from '../../chaos/waiting-runner.ts';
import { storedEventRows } from '../support/stored-events.ts';

async function cleanLog(): Promise<RawEvent[]> {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('clean.db'), runner: echoRunner({ steps: 2 }) });
  for (const p of ['one two', 'three four']) await engine.admit('ses_c', { prompt: p });
  await engine.awaitIdle('ses_c');
  await engine.cancel('ses_c'); // nothing to cancel: changes nothing
  const rows = storedEventRows(engine.db);
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

test('chaos checker - waits: a clean approval flow passes; a call started unapproved or twice, a timer ended early, a wait ended twice or left open are caught', async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('waits.db'), runner: waitingRunner });
  for (const [session, approve] of [
    ['ses_y', true],
    ['ses_n', false],
  ] as const) {
    await engine.admit(session, { prompt: 'w0 ask' });
    await engine.awaitIdle(session);
    const [call] = (await engine.status(session)).waits.map((w) => w.name);
    await (approve ? engine.approve(session, call!) : engine.deny(session, call!));
    await engine.awaitIdle(session);
  }
  const rows = storedEventRows(engine.db);
  await engine.close();
  tmp.remove();
  const events = fromSqliteRows(rows);
  assert.equal(check(events, { quiescent: true }), [], 'the clean flow');
  const yes = events.filter((e) => e.session === 'ses_y');
  const no = events.filter((e) => e.session === 'ses_n');
  assert.is(yes.filter((e) => e.type === 'tool.started').length, 1, 'the approved call ran');
  assert.is(no.filter((e) => e.type === 'tool.started').length, 0, 'the denied call did not');
  const after = (list: RawEvent[], i: number, e: RawEvent) => renumber([...list.slice(0, i + 1), e, ...list.slice(i + 1)]);
  const s1 = at(yes, 'tool.started');
  assert.equal(checksOf(after(yes, s1, { ...yes[s1]! })), ['waits'], 'started twice');
  // in the denied session's resumed turn, as its first write
  const resumedStart = at(no, 'execution.started', 1);
  const startedInNo = {
    ...yes[s1]!,
    session: 'ses_n',
    payload: { ...no[resumedStart]!.payload, messageId: 'msg_x', callId: no[at(no, 'wait.started')]!.payload.callId },
  };
  assert.equal(checksOf(after(no, resumedStart, startedInNo)), ['waits'], 'started though denied');
  const r1 = at(yes, 'wait.resolved');
  assert.equal(checksOf(after(yes, r1, { ...yes[r1]! })), ['waits'], 'ended twice');
  const open = yes.filter((e) => e.type !== 'wait.resolved' && e.type !== 'tool.started');
  assert.ok(checksOf(renumber(open)).includes('nothing_stranded'), 'an approval left open at quiescence');
  const timer: RawEvent[] = [
    { session: 'ses_t', seq: 1, type: 'wait.started', time: 1, payload: { executionId: 'exe_1', kind: 'timer', name: 'sleep-1', until: 100 } },
    { session: 'ses_t', seq: 2, type: 'wait.resolved', time: 99, payload: { executionId: 'exe_1', kind: 'timer', name: 'sleep-1', outcome: 'elapsed' } },
  ];
  assert.equal(checksOf(timer), ['waits'], 'a timer ended early');
  assert.equal(checksOf([timer[0]!, { ...timer[1]!, time: 100 }]), [], 'at its time');
});

test.run();
