/**
 * Listing sessions at 100,000 sessions: the first page and a deep one (the 1,000th of 50, past half
 * the sessions), unfiltered and by tag, a state filter's first page, and id prefixes holding few
 * sessions, all of them and the oldest 10,000, each the p50 of SAMPLES calls of `listSessionPage` on
 * the projection (target: under 50 ms each). The sessions are folded
 * into the projection by the real Projector (one `input.admitted` with tags each, in pages of 1,000).
 */
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { Projector } from '../../src/projector/projector.ts';
import { listSessionPage } from '../../src/projector/session-list.ts';
import { checkListFilter, type ListFilter } from '../../src/sessions/list.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { percentile } from '../lib/measure.ts';
import { fmt, say } from '../lib/report.ts';
import type { Section } from '../lib/context.ts';

const S = 'list';
const SESSIONS = 100_000;
const SAMPLES = 21;
const T0 = Date.parse('2026-12-01T00:00:00Z');

export const listSessions: Section = {
  name: S,
  title: 'sessiond ls at 100,000 sessions: first and deep pages, unfiltered, by tag, by state and by id prefix',
  async run(ctx) {
    const db = openDatabase(join(ctx.tmp, 'list.db'));
    migrate(db);
    const projector = new Projector(db);
    const f0 = performance.now();
    for (let from = 0; from < SESSIONS; from += 1000) {
      const page: SessionEvent[] = [];
      for (let i = from; i < from + 1000; i++) {
        page.push({
          id: `evt_${i}`,
          type: 'input.admitted',
          version: 1,
          sessionId: `ses_${String(i).padStart(6, '0')}`,
          seq: 1,
          time: T0 + i * 10,
          position: i + 1,
          payload: {
            inputId: 'inp_1',
            prompt: 'hello',
            delivery: 'queue',
            wake: true,
            source: 'user',
            tags: { customer: `c${i % 100}`, env: i % 2 ? 'prod' : 'test' },
          },
        } as SessionEvent);
      }
      projector.apply(page);
    }
    say(S, `${fmt(SESSIONS)} sessions folded into the projection in ${fmt(performance.now() - f0)} ms`);
    const p50 = (filter: ListFilter) => {
      const checked = checkListFilter(filter);
      const samples: number[] = [];
      let n = 0;
      for (let i = 0; i < SAMPLES; i++) {
        const s0 = performance.now();
        n = listSessionPage(db, checked).sessions.length;
        samples.push(performance.now() - s0);
      }
      if (n === 0) throw new Error(`the filter ${JSON.stringify(filter)} listed nothing`);
      return percentile(samples, 50);
    };
    /** The cursor after `skip` sessions of the filter (walked once, by pages of 1,000). */
    const cursorAfter = (filter: ListFilter, skip: number): string => {
      let after: string | undefined;
      for (let done = 0; done < skip; done += 1000) {
        const page = listSessionPage(db, checkListFilter({ ...filter, limit: 1000, ...(after ? { after } : {}) }));
        after = page.next!;
      }
      return after!;
    };
    const deep = cursorAfter({}, 50_000);
    const deepTag = cursorAfter({ tags: { env: 'prod' } }, 25_000);
    const figures: [string, string, ListFilter][] = [
      ['list.first', 'ls: first page of 50, 100k sessions', {}],
      ['list.deep', 'ls: a page of 50 after 50,000 sessions', { after: deep }],
      ['list.tag.first', 'ls --tag (1 in 2 sessions): first page', { tags: { env: 'prod' } }],
      ['list.tag.deep', 'ls --tag: a page after 25,000 of its sessions', { tags: { env: 'prod' }, after: deepTag }],
      ['list.tags.first', 'ls --tag --tag (1 in 100): first page', { tags: { customer: 'c7', env: 'prod' } }],
      ['list.state.first', 'ls --state idle: first page', { state: 'idle' }],
      // an id prefix: few sessions (its key range, sorted), all of them, and 10,000 of the oldest (the
      // order's index walked past 90,000 newer ones: the worst a prefix of many costs here)
      ['list.prefix.few', 'ls --prefix (100 sessions): first page', { idPrefix: 'ses_0999' }],
      ['list.prefix.all', 'ls --prefix (every session): first page', { idPrefix: 'ses_' }],
      ['list.prefix.oldest', 'ls --prefix (the oldest 10,000): first page', { idPrefix: 'ses_00' }],
    ];
    for (const [key, figure, filter] of figures)
      ctx.results.add(
        { key, section: S, figure, unit: 'ms', value: p50(filter), note: `p50 of ${SAMPLES} calls on the projection (SQLite, one query)` },
        { max: 50 },
      );
    db.close();
  },
};
