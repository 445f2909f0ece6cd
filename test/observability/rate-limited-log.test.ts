/**
 * The refusal log: at most one line per kind of refusal per window, then one summary of what was
 * held back, each line cut; time moved by hand on a ManualClock (no sleeps).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode } from '../../src/errors.ts';
import { DEFAULT_MAX_LOG_LINE_CHARS, DEFAULT_REFUSAL_LOG_INTERVAL_MS, createRefusalLog } from '../../src/observability/rate-limited-log.ts';
import { expectCode } from '../../src/testing/fixtures.ts';

test('refusal log - one line per kind per 10 s, then "refused 1,234 more requests (invalid_input 1,200, permission 34) in the last 10 s"', async () => {
  const clock = new ManualClock(1_000_000);
  const lines: string[] = [];
  const log = createRefusalLog({ write: (line) => lines.push(line), clock });
  for (let i = 0; i < 1_201; i++) log.refused('invalid_input', `refused a status request (invalid_id): number ${i}`);
  for (let i = 0; i < 35; i++) log.refused('permission', `refused a reply subject, number ${i}`);
  assert.equal(lines, ['refused a status request (invalid_id): number 0', 'refused a reply subject, number 0'], 'the first of each kind, nothing more');
  await clock.advance(DEFAULT_REFUSAL_LOG_INTERVAL_MS - 1);
  assert.is(lines.length, 2, 'no summary before the window ends');
  await clock.advance(1);
  assert.is(lines[2], 'refused 1,234 more requests (invalid_input 1,200, permission 34) in the last 10 s');
  assert.equal(log.counts, { invalid_input: 1_201, permission: 35 });
  await clock.advance(60_000);
  assert.is(lines.length, 3, 'a quiet spell writes nothing');
  log.refused('permission', 'after the quiet spell');
  assert.is(lines[3], 'after the quiet spell', 'a new window writes the first of its kind again');
  log.close();
  assert.is(lines.length, 4, 'nothing held back: no summary');
});

test('refusal log - a kind written late in one window is not written again early in the next', async () => {
  const clock = new ManualClock(0);
  const lines: string[] = [];
  const log = createRefusalLog({ write: (line) => lines.push(line), clock, intervalMs: 10_000 });
  log.refused('invalid_input', 'first invalid');
  await clock.advance(9_000);
  log.refused('permission', 'first permission');
  await clock.advance(1_000); // the window that opened at 0 ends: nothing was held back
  assert.equal(lines, ['first invalid', 'first permission']);
  await clock.advance(1_000);
  log.refused('permission', 'second permission, 2 s after the first');
  log.refused('invalid_input', 'second invalid, 11 s after the first');
  assert.equal(lines.slice(2), ['second invalid, 11 s after the first'], 'permission was written 2 s ago: held back');
  log.close();
  assert.is(lines.at(-1), 'refused 1 more request (permission 1) in the last 0 ms', 'close writes what is held back at once');
});

test('refusal log - lines are cut (a hostile value is never echoed whole), options are checked', async () => {
  const clock = new ManualClock(0);
  const lines: string[] = [];
  const log = createRefusalLog({ write: (line) => lines.push(line), clock });
  log.refused('invalid_input', `refused: ${'v'.repeat(600_000)}`);
  assert.ok(lines[0]!.length <= DEFAULT_MAX_LOG_LINE_CHARS + 20, `${lines[0]!.length} characters`);
  assert.match(lines[0]!, /…\(600009 bytes\)$/);
  log.close();
  expectCode(() => createRefusalLog({ write: () => {}, intervalMs: 0 }), ErrorCode.InvalidOption, 'intervalMs');
  expectCode(() => createRefusalLog({ write: () => {}, intervalMS: 5 } as never), ErrorCode.InvalidOption, 'Unknown refusal log option "intervalMS"');
});

test.run();
