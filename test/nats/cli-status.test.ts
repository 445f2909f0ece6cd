/**
 * `sessiond status` without a session over NATS, as a real subprocess against a real nats-server
 * and a real worker: a page of the newest sessions (the worker's `list`, then each one's status),
 * with the cursor of the next page, never the whole stream. What the server sent the command's
 * connection is counted from its monitoring port (/connz of closed connections): a page costs its
 * sessions, not the events in the stream.
 */
import * as assert from 'uvu/assert';
import { get as httpGet } from 'node:http';
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import { CLIENT, OBSERVER } from '../../src/testing/nats-server.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { runCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionStatus } from '../../src/sessions/sessions.ts';

const s = cliSuite('sessiond status over NATS');

const SESSIONS = 45;

function monitor<T>(ctx: CliCtx, path: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const req = httpGet({ host: '127.0.0.1', port: ctx.server.monitorPort, path, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(JSON.parse(body) as T));
    });
    req.once('error', reject);
    req.once('timeout', () => req.destroy(new Error(`${path} timed out`)));
  });
}

type Closed = { cid: number; out_msgs: number; authorized_user?: string };
const closed = async (ctx: CliCtx) => (await monitor<{ connections: Closed[] | null }>(ctx, '/connz?state=closed&auth=true&limit=10000')).connections ?? [];

/** Messages the server sent to the client user's connections that closed while `run` ran (the command's own). */
async function messagesSentDuring(ctx: CliCtx, run: () => Promise<void>): Promise<number> {
  const before = new Set((await closed(ctx)).map((c) => c.cid));
  await run();
  let sent = 0;
  await waitFor(
    async () => {
      const fresh = (await closed(ctx)).filter((c) => !before.has(c.cid) && c.authorized_user === CLIENT.user);
      sent = fresh.reduce((n, c) => n + c.out_msgs, 0);
      return fresh.length > 0;
    },
    { timeoutMs: 5000, what: 'the command connection among the closed ones' },
  );
  return sent;
}

const headLines = (out: string) => out.split('\n').filter((l) => /^ses_\S+: \w+ at seq \d+/.test(l));

s(
  `cli status over NATS - without a session: the newest page of ${SESSIONS} sessions, each one's status, the next by cursor; it reads a page, not the stream`,
  async (ctx) => {
    await natsWorker(ctx, 'status-worker.db', 0);
    const where = ['--nats', ctx.server.url, ...as(CLIENT)];
    const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
    const ids = Array.from({ length: SESSIONS }, (_, i) => `ses_page_${String(i).padStart(2, '0')}`);
    try {
      for (const id of ids) await client.admit(id, { prompt: `a turn of several words for ${id}` });
      // every turn has run, and the worker's projection (what `list` reads) has all of them settled
      await waitFor(async () => (await client.list({ state: 'settled', limit: 1000 })).sessions.length === SESSIONS, {
        timeoutMs: 60_000,
        what: `${SESSIONS} settled sessions listed`,
      });
    } finally {
      await client.close();
    }
    const stream = await monitor<{ messages: number }>(ctx, '/jsz');
    assert.ok(stream.messages >= SESSIONS * 5, `the stream holds the sessions' turns (${stream.messages} messages)`);

    let first = { code: -1, stdout: '', stderr: '' };
    const sent = await messagesSentDuring(ctx, async () => {
      first = await runCli(['status', ...where]);
    });
    assert.is(first.code, 0, first.stdout + first.stderr);
    assert.ok(
      sent < stream.messages / 4,
      `the command was sent ${sent} messages for a page of 20 sessions, while the stream holds ${stream.messages}: it must not read the stream`,
    );
    const newest = [...ids].reverse();
    assert.equal(
      headLines(first.stdout).map((l) => l.split(':')[0]),
      newest.slice(0, 20),
      'the 20 newest, newest first',
    );
    assert.match(first.stdout, /ses_page_44: settled at seq \d+; no owner; last turn succeeded\n {2}pending inputs: none/);
    const more = /^more: sessiond status \.\.\. --after (\S+)/m.exec(first.stdout);
    assert.ok(more, `a line says how to get the next page:\n${first.stdout}`);

    // the pages after it, by cursor: every session once, the last page without a "more"
    const second = await runCli(['status', ...where, '--after', more[1]!]);
    assert.is(second.code, 0, second.stderr);
    assert.equal(
      headLines(second.stdout).map((l) => l.split(':')[0]),
      newest.slice(20, 40),
    );
    const next = /^more: sessiond status \.\.\. --after (\S+)/m.exec(second.stdout)![1]!;
    const last = await runCli(['status', ...where, '--after', next, '--json']);
    assert.is(last.code, 0, last.stderr);
    const page = JSON.parse(last.stdout) as { sessions: SessionStatus[]; next: string | null };
    assert.equal(
      page.sessions.map((x) => [x.sessionId, x.state, x.outcome]),
      newest.slice(40).map((id) => [id, 'settled', 'succeeded']),
    );
    assert.is(page.next, null, 'the last page');

    const small = JSON.parse((await runCli(['status', ...where, '--limit', '3', '--json'])).stdout) as { sessions: SessionStatus[]; next: string | null };
    assert.equal(
      small.sessions.map((x) => x.sessionId),
      newest.slice(0, 3),
    );
    assert.ok(small.next);

    // the page is the workers' list: the observer, who may read the stream but send no command, is told so
    const observer = await runCli(['status', '--nats', ctx.server.url, ...as(OBSERVER)]);
    assert.is(observer.code, 77, observer.stdout + observer.stderr);
    assert.match(observer.stderr, 'NATS user observer may not send sessiond commands: nats.conf refuses publishing to sessiond.cmd.list');
  },
);

s.run();
