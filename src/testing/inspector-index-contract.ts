/**
 * The InspectorIndexStore contract (src/inspector/index-store.ts), written once and run against
 * every implementation:
 *
 *   inspectorIndexContract('sqlite', async () => ({ index, reopen, otherVersion, cleanup })).run();
 *
 * `reopen()` opens the same storage again (a restarted inspector; the memory index has none: undefined);
 * `otherVersion()` opens it as a build with other folds would (undefined: nothing to share).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { committed, ev } from './fixtures.ts';
import { evolve, initialSnapshot, type SessionSnapshot } from '../machines/decider.ts';
import { summarizeBlock, type ConversationMark, type FollowedSession, type InspectorIndexStore, type TimelineBlock } from '../inspector/index-store.ts';
import { summarize } from '../inspector/store.ts';

export interface InspectorIndexFixture {
  index: InspectorIndexStore;
  reopen: () => InspectorIndexStore | undefined;
  otherVersion: () => InspectorIndexStore | undefined;
  cleanup: () => Promise<void>;
}

/** A session folded over `n` admissions. */
function snapshotAt(sessionId: string, n: number): SessionSnapshot {
  let snap = initialSnapshot(sessionId);
  for (let i = 1; i <= n; i++) {
    snap = evolve(
      snap,
      committed(ev('input.admitted', { inputId: `inp_${i}`, prompt: `prompt ${i} ünïcødé`, source: 'user' }), { sessionId, seq: i, time: 1_000 + i }),
    );
  }
  return snap;
}

const mark = (seq: number): ConversationMark => ({
  seq,
  eventId: `evt_${seq}`,
  time: 1_000 + seq,
  first: seq / 2,
  rows: { inputs: seq, messages: 2 * seq, recoveries: 0 },
});

let counter = 0;

/** A session followed up to `n` admissions. */
function followedAt(sessionId: string, n: number): FollowedSession {
  const snapshot = snapshotAt(sessionId, n);
  return { snapshot, previous: n > 1 ? snapshotAt(sessionId, n - 1) : null, summary: summarize(snapshot, { time: 1_000 + n, type: 'input.admitted' }) };
}

const block = (k: number, tag = 'a'): TimelineBlock => ({
  block: k,
  lastId: `evt_${tag}${k}`,
  times: [10 * k + 1, 10 * k + 2],
  types: { 'input.admitted': [k * 4096 + 1, k * 4096 + 9], 'execution.settled': [k * 4096 + 4096] },
});

export function inspectorIndexContract(name: string, open: () => Promise<InspectorIndexFixture>) {
  const s = suite<{ fx: InspectorIndexFixture }>(`InspectorIndexStore contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.fx = await open();
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });
  const session = () => `ses_index${process.pid}x${++counter}`;

  s('a session never indexed has no checkpoint and no marks', ({ fx }) => {
    assert.is(fx.index.checkpointAt(session(), 1_000), undefined);
    assert.equal(fx.index.marksOf(session()), []);
  });

  s('the checkpoint at or before a seq is the latest one there, read back exactly', ({ fx }) => {
    const id = session();
    fx.index.putCheckpoints([snapshotAt(id, 3), snapshotAt(id, 6)]);
    fx.index.putCheckpoints([snapshotAt(id, 9)]);
    assert.is(fx.index.checkpointAt(id, 2), undefined, 'none before the first');
    assert.equal(fx.index.checkpointAt(id, 3), snapshotAt(id, 3));
    assert.equal(fx.index.checkpointAt(id, 8), snapshotAt(id, 6));
    assert.equal(fx.index.checkpointAt(id, 1_000), snapshotAt(id, 9));
    fx.index.putCheckpoints([snapshotAt(id, 6)]);
    assert.equal(fx.index.checkpointAt(id, 7), snapshotAt(id, 6), 'a checkpoint put again replaces the one at its seq');
  });

  s('marks come back in order; one already held is not added twice', ({ fx }) => {
    const id = session();
    fx.index.putMarks(id, [mark(250), mark(500)]);
    fx.index.putMarks(id, [mark(750)]);
    assert.equal(fx.index.marksOf(id), [mark(250), mark(500), mark(750)]);
    fx.index.putMarks(id, [mark(750)]);
    assert.equal(fx.index.marksOf(id), [mark(250), mark(500), mark(750)]);
  });

  s('sessions are kept apart, and a session forgotten has nothing left', ({ fx }) => {
    const [a, b] = [session(), session()];
    fx.index.putCheckpoints([snapshotAt(a, 2), snapshotAt(b, 4)]);
    fx.index.putMarks(a, [mark(2)]);
    fx.index.putMarks(b, [mark(4)]);
    assert.equal([fx.index.checkpointAt(a, 10)?.context.seq, fx.index.checkpointAt(b, 10)?.context.seq], [2, 4]);
    fx.index.forget(a);
    assert.equal([fx.index.checkpointAt(a, 10), fx.index.marksOf(a)], [undefined, []]);
    assert.equal([fx.index.checkpointAt(b, 10)?.context.seq, fx.index.marksOf(b)], [4, [mark(4)]]);
  });

  s('what is put is there for an index opened again over the same storage (a restart)', ({ fx }) => {
    const id = session();
    fx.index.putCheckpoints([snapshotAt(id, 5)]);
    fx.index.putMarks(id, [mark(4)]);
    const again = fx.reopen();
    if (!again) return; // kept in memory only: a restart builds it again
    assert.equal(again.checkpointAt(id, 5), snapshotAt(id, 5));
    assert.equal(again.marksOf(id), [mark(4)]);
  });

  s('entries made by other folds (another machine or conversation version) are not read', ({ fx }) => {
    const id = session();
    fx.index.putCheckpoints([snapshotAt(id, 5)]);
    fx.index.putMarks(id, [mark(4)]);
    const other = fx.otherVersion();
    if (!other) return;
    assert.is(other.checkpointAt(id, 5), undefined);
    assert.equal(other.marksOf(id), []);
  });

  s('where the follow of a log stopped comes back with every session as it was then; another log has none', ({ fx }) => {
    const [a, b] = [session(), session()];
    const log = `log_${a}`;
    assert.is(fx.index.followed(log), undefined, 'never followed');
    fx.index.putFollowed(log, 10, [followedAt(a, 2), followedAt(b, 1)], true);
    fx.index.putFollowed(log, 14, [followedAt(a, 3)]);
    const back = fx.index.followed(log)!;
    assert.is(back.position, 14);
    assert.is(fx.index.followedPosition(log), 14, 'the position alone');
    assert.is(fx.index.followedPosition(`other_${a}`), undefined);
    const byId = new Map(back.sessions.map((x) => [x.snapshot.context.sessionId, x]));
    assert.equal(byId.get(a), followedAt(a, 3), 'a session put again is replaced');
    assert.equal(byId.get(b), followedAt(b, 1), 'one not changed since is kept');
    assert.equal(fx.index.headOf(a), followedAt(a, 3), 'one session read back alone');
    assert.is(fx.index.headOf(`never_${a}`), undefined, 'a session never kept');
    assert.is(fx.index.followed(`other_${a}`), undefined, 'another log');
    fx.index.forget(b);
    assert.ok(!fx.index.followed(log)!.sessions.some((x) => x.snapshot.context.sessionId === b), 'a session forgotten is not followed');
    assert.is(fx.index.headOf(b), undefined, 'nor read back alone');
    fx.index.putTimelineBlocks(a, [block(0)]);
    fx.index.putFollowed(log, 3, [followedAt(b, 1)], true);
    assert.equal(fx.index.timelineOf(a), [], 'reset: the timeline blocks go too (built again by the follow)');
    assert.equal(
      fx.index.followed(log)!.sessions.filter((x) => [a, b].includes(x.snapshot.context.sessionId)),
      [followedAt(b, 1)],
      'reset: a follow started again drops what the last one kept',
    );
  });

  s('timeline blocks: summaries from the first, contiguous; a block read back exactly; forgotten with the session', ({ fx }) => {
    const [a, b] = [session(), session()];
    assert.equal(fx.index.timelineOf(a), []);
    fx.index.putTimelineBlocks(a, [block(0), block(1)]);
    fx.index.putTimelineBlocks(a, [block(3)]);
    fx.index.putTimelineBlocks(b, [block(0, 'b')]);
    assert.equal(fx.index.timelineOf(a), [summarizeBlock(block(0)), summarizeBlock(block(1))], 'up to the first block missing');
    assert.equal(fx.index.timelineBlock(a, 1), block(1));
    assert.equal(fx.index.timelineBlock(b, 0), block(0, 'b'));
    assert.is(fx.index.timelineBlock(a, 2), undefined);
    fx.index.putTimelineBlocks(a, [block(1, 'again')]);
    assert.equal(fx.index.timelineBlock(a, 1), block(1, 'again'), 'a block put again replaces the one at its number');
    fx.index.forget(a);
    assert.equal([fx.index.timelineOf(a), fx.index.timelineBlock(a, 0)], [[], undefined]);
    assert.equal(fx.index.timelineOf(b).length, 1);
  });

  s('the follow and the timeline are there for an index opened again; not for other folds', ({ fx }) => {
    const id = session();
    const log = `log_${id}`;
    fx.index.putFollowed(log, 7, [followedAt(id, 4)], true);
    fx.index.putTimelineBlocks(id, [block(0)]);
    const again = fx.reopen();
    if (again) {
      assert.equal(again.followed(log), { position: 7, sessions: [followedAt(id, 4)] });
      assert.equal(again.timelineBlock(id, 0), block(0));
      assert.equal(again.timelineOf(id), [summarizeBlock(block(0))]);
    }
    const other = fx.otherVersion();
    if (other) {
      assert.is(other.followed(log), undefined);
      assert.equal(other.timelineOf(id), []);
    }
  });

  return s;
}
