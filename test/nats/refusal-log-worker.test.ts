// A real `sessiond start` worker flooded by the client user with requests it refuses unanswered:
// reply subjects that are not a client inbox, and publishes without a reply subject. Its log gets
// one line per kind and then a summary per 10 s, every line short, instead of a ~540-byte line per
// request. Each round ends with an answered request, so the worker has taken the refused ones before
// the next round goes (no burst lost for want of a place in the queue group).
import * as assert from 'uvu/assert';
import { subjects } from '../../src/nats/subjects.ts';
import { DEFAULT_MAX_LOG_LINE_CHARS } from '../../src/observability/rate-limited-log.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { decodeJson } from '../../src/nats/command-protocol.ts';
import { cliSuite, natsWorker } from './cli-suite.ts';

const s = cliSuite("a worker's log under refused requests");
const ROUNDS = 30;
const PREFIX = 'sessiond: command service: ';

s('refusal log - a flooded worker writes one line per kind and summaries with the counts, each line cut', async (ctx) => {
  const worker = await natsWorker(ctx, 'flooded.db', 0);
  const attacker = await connectNats({ servers: ctx.server.url, ...CLIENT });
  const huge = `${'r'.repeat(5000)}.`;
  try {
    for (let i = 0; i < ROUNDS; i++) {
      attacker.publish(subjects.command('status'), new TextEncoder().encode(JSON.stringify({ sessionId: 'ses_flood' })), {
        reply: `not.an.inbox.${'z'.repeat(300)}.${i}`,
      });
      attacker.publish(subjects.command('admit'), new TextEncoder().encode(JSON.stringify({ sessionId: huge, prompt: 'p' })));
      const reply = await attacker.request(subjects.command('status'), new TextEncoder().encode(JSON.stringify({ sessionId: huge })), { timeout: 10_000 });
      assert.is((decodeJson(reply.data) as { error: { code: string } }).error.code, 'invalid_id', 'answered, and not logged');
    }
  } finally {
    await attacker.close();
  }
  const refusalLines = () =>
    worker
      .output()
      .split('\n')
      .filter((l) => l.startsWith(PREFIX));
  const summaries = () => refusalLines().filter((l) => l.startsWith(`${PREFIX}refused `) && / more requests? \(/.test(l));
  const counted = () => summaries().reduce((n, l) => n + Number(/refused ([\d,]+) more/.exec(l)![1]!.replace(/,/g, '')), 0);
  const full = () => refusalLines().filter((l) => !summaries().includes(l));
  // every refusal is either written or counted in a summary, once its window (10 s) ends
  await waitFor(() => full().length + counted() >= 2 * ROUNDS, {
    timeoutMs: 40_000,
    intervalMs: 200,
    what: `${2 * ROUNDS} refusals written or summed up:\n${refusalLines().join('\n')}`,
  });
  assert.is(full().length + counted(), 2 * ROUNDS, refusalLines().join('\n'));
  assert.ok(
    full().length <= 2 * (summaries().length + 1),
    `at most one line per kind per window, got ${full().length} lines and ${summaries().length} summaries:\n${refusalLines().join('\n')}`,
  );
  assert.match(full().join('\n'), 'is not an inbox under _INBOX_client');
  assert.match(full().join('\n'), 'A message on sessiond.cmd.admit has no reply subject');
  assert.not.match(worker.output(), 'Invalid session id', 'answered refusals are not logged');
  for (const line of refusalLines()) assert.ok(line.length <= PREFIX.length + DEFAULT_MAX_LOG_LINE_CHARS + 20, `a long line: ${line.length} characters`);
  // each summary counts its window's kinds; the rounds may straddle a window (a loaded machine), so
  // both kinds are asked of the summaries together (30 of each cannot all be first of their window)
  for (const line of summaries()) assert.match(line, /\((invalid_input|permission) \d+(, (invalid_input|permission) \d+)?\) in the last 10 s$/);
  assert.match(summaries().join('\n'), /invalid_input \d+/);
  assert.match(summaries().join('\n'), /permission \d+/);
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
});

s.run();
