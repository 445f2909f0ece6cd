/**
 * One codec: every path that reads events (a single frame or an export file's, a JetStream batch, a
 * live message, a SQLite row) decodes through `eventFromFrame`, so a frame that is wrong in a given
 * way is refused the same way everywhere; and the catalog's upcaster seam brings an older payload
 * version up to the current one before it is validated.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { catalog } from '../../src/events/catalog.ts';
import { decodeEvent, eventFromFrame, pack, type EventCatalog } from '../../src/events/codec.ts';
import { decodeBatch } from '../../src/nats/stream.ts';
import { decodeLiveEvent } from '../../src/nats/live-bus.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { tempDir } from '../support/tmp.ts';
import { committed, draft, ev, expectCode } from '../../src/testing/fixtures.ts';
import { changeEvents } from '../support/stored-events.ts';

const good = committed(ev('input.admitted', { inputId: 'inp_1', prompt: 'hi', delivery: 'queue', wake: true, source: 'user' }), {
  id: 'evt_1',
  sessionId: 'ses_c',
  seq: 1,
  time: 1_700_000_000_000,
});

/** The code each path throws for `frame` (or 'ok'). */
function codes(frame: Record<string, unknown>): Record<string, string> {
  const code = (fn: () => unknown) => {
    try {
      fn();
      return 'ok';
    } catch (err) {
      return isSessiondError(err) ? err.code : `not a SessiondError: ${String(err)}`;
    }
  };
  return {
    frame: code(() => decodeEvent(pack(frame))),
    batch: code(() => decodeBatch(pack([frame]), 1, subjects.events('ses_c'))),
    live: code(() => decodeLiveEvent(pack(frame), subjects.live('ses_c', String(frame['type']) as 'input.admitted'))),
  };
}

test('one codec - a frame wrong in a given way is refused with the same code on every path', () => {
  const same = (frame: Record<string, unknown>, code: string) =>
    assert.equal(codes(frame), { frame: code, batch: code, live: code }, JSON.stringify(frame).slice(0, 100));
  same(good, 'ok');
  same({ ...good, payload: { ...good.payload, delivery: 'later' } }, ErrorCode.InvalidPayload);
  same({ ...good, type: 'input.exploded' }, ErrorCode.UnknownEventType);
  same({ ...good, version: 9 }, ErrorCode.UnsupportedEventVersion);
  same({ ...good, id: 'bad id' }, ErrorCode.InvalidId);
  same({ ...good, time: -1 }, ErrorCode.DecodeFailed);
  same({ ...good, seq: 0 }, ErrorCode.DecodeFailed);
  same({ ...good, sessionId: undefined }, ErrorCode.DecodeFailed);
});

test("one codec - a SQLite row goes through the same checks: a row changed behind sessiond's back is refused, not returned", async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('rows.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  await log.append('ses_c', 0, [draft(ev('input.admitted', { inputId: 'inp_1', prompt: 'hi', delivery: 'queue', wake: true }), { id: 'evt_1', time: 1 })]);
  assert.is((await log.readSession('ses_c'))[0]!.type, 'input.admitted');
  changeEvents(db, (r) => r.id === 'evt_1', { data: Buffer.from(pack({ inputId: 'inp_1', prompt: 42 })) });
  await expectCode(log.readSession('ses_c'), ErrorCode.InvalidPayload, 'Event row 1 (session ses_c, seq 1) is not a valid sessiond event');
  changeEvents(db, (r) => r.id === 'evt_1', { type: 'input.exploded' });
  await expectCode(log.readSession('ses_c'), ErrorCode.UnknownEventType);
  await log.close();
  db.close();
  tmp.remove();
});

test('one codec - the upcaster seam: a version-1 payload is brought up to version 2 before it is validated', () => {
  // a catalog where input.admitted is at version 2: `prompt` became `text`
  const v2 = z.object({ inputId: z.string(), text: z.string(), delivery: z.enum(['steer', 'queue']), wake: z.boolean(), source: z.enum(['user', 'recovery']) });
  const events: EventCatalog = {
    ...(catalog as EventCatalog),
    'input.admitted': {
      type: 'input.admitted',
      version: 2,
      durable: true,
      schema: v2,
      upcasters: {
        1: (p) => {
          const { prompt, ...rest } = p as { prompt: string };
          return { ...rest, text: prompt };
        },
      },
    },
  };
  const up = eventFromFrame({ ...good, version: 1 }, { describe: 'a v1 frame', events });
  assert.is(up.version, 2, 'read at the current version');
  assert.equal(up.payload, { inputId: 'inp_1', text: 'hi', delivery: 'queue', wake: true, source: 'user' });
  const current = eventFromFrame(
    { ...good, version: 2, payload: { inputId: 'inp_2', text: 'new', delivery: 'queue', wake: true, source: 'user' } },
    { describe: 'a v2 frame', events },
  );
  assert.is((current.payload as { text: string }).text, 'new');
  // no upcaster from a version: refused, saying so
  const noWay: EventCatalog = { ...events, 'input.admitted': { ...events['input.admitted']!, upcasters: {} } };
  expectCode(
    () => eventFromFrame({ ...good, version: 1 }, { describe: 'a v1 frame', events: noWay }),
    ErrorCode.UnsupportedEventVersion,
    'no upcaster from version 1',
  ); // a v1 payload without an upcaster is refused
});

test.run();
