/**
 * Blobs and slow writers, on the embedded log with an injected clock: an admission whose append
 * comes late after its blobs were stored marks them again, so a sweep meanwhile never leaves its
 * event without its blob; a fork appended after a delete of its source read the references keeps
 * the blobs it copies.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { DEFAULT_BLOB_GRACE_MS } from '../../src/blobs/sweep.ts';
import { sweepProjectedBlobs, missingBlobs } from '../../src/sessions/blob-sweep.ts';
import { executeMarked, freshMark, MAX_BLOB_REMARKS } from '../../src/execution/blob-marks.ts';
import { sequentialIds } from '../../src/ids.ts';
import { tempDir } from '../support/tmp.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ErrorCode } from '../../src/errors.ts';
import { pngBytes } from '../support/png.ts';

const T0 = 1_760_000_000_000;
const HOUR = DEFAULT_BLOB_GRACE_MS;

/** Hooks run once, in the log's own calls: before a session's first read, before its append, after a catch-up's read. */
interface Hooks {
  beforeRead?: { sessionId: string; run: () => Promise<void> };
  beforeAppend?: { sessionId: string; run: () => Promise<void> };
  afterPages?: () => Promise<void>;
}

function hooked(log: EventLog, hooks: Hooks): EventLog {
  const once = async (h: { run: () => Promise<void> } | (() => Promise<void>) | undefined, clear: () => void) => {
    if (!h) return;
    clear();
    await (typeof h === 'function' ? h() : h.run());
  };
  return new Proxy(log, {
    get(target, prop, receiver) {
      if (prop === 'readSession')
        return async (sessionId: string, options?: unknown) => {
          if (hooks.beforeRead?.sessionId === sessionId) await once(hooks.beforeRead, () => delete hooks.beforeRead);
          return target.readSession(sessionId, options as never);
        };
      if (prop === 'append')
        return async (sessionId: string, expected: number, drafts: never) => {
          if (hooks.beforeAppend?.sessionId === sessionId) await once(hooks.beforeAppend, () => delete hooks.beforeAppend);
          return target.append(sessionId, expected, drafts);
        };
      if (prop === 'readPages')
        return async function* (options: never) {
          yield* target.readPages(options);
          await once(hooks.afterPages, () => delete hooks.afterPages);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function inWorld(body: (w: { clock: ManualClock; engine: Engine; hooks: Hooks }) => Promise<void>): Promise<void> {
  const tmp = tempDir('sessiond-grace-');
  const clock = new ManualClock(T0);
  const hooks: Hooks = {};
  const engine = await openEngine({ file: tmp.file('s.db'), runner: echoRunner(), clock, ids: sequentialIds(), decorateLog: (log) => hooked(log, hooks) });
  try {
    await body({ clock, engine, hooks });
  } finally {
    await engine.close();
    tmp.remove();
  }
}

const image = (seed: number) => pngBytes(200_000, seed);
const inline = (bytes: Buffer) => [{ type: 'image' as const, data: bytes.toString('base64'), mediaType: 'image/png' }];
const sweep = (e: Engine, now: number) => sweepProjectedBlobs(e.db, e.log, e.blobs!, { now });

test('blob grace - an admission stalled past half the grace marks its blob again, so a sweep before its append keeps it', () =>
  inWorld(async ({ clock, engine: e, hooks }) => {
    const bytes = image(1);
    let swept: string[] | undefined;
    // stored at T0; the admission stalls 48 min before it decides, and its append 18 min more, during which a sweep runs
    hooks.beforeRead = { sessionId: 'ses_slow', run: async () => void (await clock.advance(0.8 * HOUR)) };
    hooks.beforeAppend = {
      sessionId: 'ses_slow',
      run: async () => {
        await clock.advance(0.3 * HOUR);
        swept = (await sweep(e, clock.now())).orphaned.map((b) => b.sha256);
      },
    };
    const receipt = await e.admit('ses_slow', { prompt: inline(bytes), wake: false });
    assert.is(receipt.admittedSeq, 1);
    assert.equal(swept, [], 'the sweep found the blob young: it was marked again at the decision');
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), [], 'the admitted event has its blob');
    assert.ok(Buffer.from(await e.blobs!.get(sha256Hex(bytes))).equals(bytes));
  }));

test('blob grace - a blob a sweep removed while its admission stalled is stored again (inline) or refused, saying so (a reference)', () =>
  inWorld(async ({ clock, engine: e, hooks }) => {
    const bytes = image(2);
    hooks.beforeRead = {
      sessionId: 'ses_inline',
      run: async () => {
        await clock.advance(1.5 * HOUR);
        assert.equal((await sweep(e, clock.now())).orphaned.length, 1, 'the sweep removed the blob meanwhile');
      },
    };
    await e.admit('ses_inline', { prompt: inline(bytes), wake: false });
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), [], 'its bytes were stored again before the append');

    // a reference the client uploaded first: nothing to store again, so nothing is appended
    const other = image(3);
    const ref = await e.blobs!.put(other, { mediaType: 'image/png' });
    hooks.beforeRead = {
      sessionId: 'ses_ref',
      run: async () => {
        await clock.advance(1.5 * HOUR);
        await sweep(e, clock.now());
      },
    };
    await expectCode(e.admit('ses_ref', { prompt: [{ type: 'image', blob: ref }], wake: false }), ErrorCode.InvalidOption, 'which is not stored');
    assert.is(await e.log.lastSeq('ses_ref'), 0, 'nothing was appended');
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), []);
  }));

test('blob grace - a mark is fresh for less than half the grace; an append that keeps coming late is refused as a timeout', () =>
  inWorld(async ({ clock, engine: e }) => {
    assert.ok(freshMark(T0, T0 + HOUR / 2 - 1, HOUR));
    assert.not.ok(freshMark(T0, T0 + HOUR / 2, HOUR));
    assert.ok(freshMark(T0, T0 + 10 * HOUR, 0), 'no grace: no check');
    let remarks = 0;
    const mark = {
      hashes: ['a'.repeat(64)],
      markedAt: clock.now(),
      graceMs: HOUR,
      remark: async () => {
        remarks++;
        await clock.advance(HOUR); // each renewal is late again
      },
    };
    await clock.advance(HOUR);
    await expectCode(
      executeMarked(e.execution.handler, 'ses_late', mark, (now) => ({ type: 'tag', now, tags: { a: 'b' } }) as never),
      ErrorCode.Timeout,
      'send the request again',
    );
    assert.is(remarks, MAX_BLOB_REMARKS);
    assert.is(await e.log.lastSeq('ses_late'), 0);
  }));

test('blob grace - a fork appended after a delete of its source read the references keeps the blobs it copies', () =>
  inWorld(async ({ clock, engine: e, hooks }) => {
    const bytes = image(4);
    await e.admit('ses_a', { prompt: [{ type: 'text', text: 'what is this?' }, ...inline(bytes)] });
    await e.awaitIdle('ses_a');
    await clock.advance(2 * HOUR);
    // the delete of ses_a brings the projection to the head (ses_b not forked yet); then the fork
    // lands, and the delete stalls 90 min before it removes what nobody referenced at its read
    let fork: unknown;
    hooks.afterPages = async () => {
      fork = await e.fork('ses_a', 'ses_b');
      await clock.advance(1.5 * HOUR);
    };
    const record = await e.delete('ses_a', { by: 'test' });
    assert.ok(fork, 'the fork ran inside the delete');
    assert.equal(record.blobs, { removed: 0, shared: 0, left: 1 }, 'the delete did not see the fork, and left the blob: the fork marked it');
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), [], "the fork's copy has its blob");
    assert.ok(Buffer.from(await e.blobs!.get(sha256Hex(bytes))).equals(bytes));
  }));

test.run();
