/**
 * Tenants on NATS, against a real nats-server whose nats.conf holds two tenant users printed by
 * `sessiond setup --tenant NAME`, and a real worker: each tenant admits and reads its own sessions;
 * naming the other's ids answers not_found on every command; the other's command subjects, the live
 * subjects and JetStream are refused by the server itself (permissions violations).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { CommandFailureCode, isCommandError } from '../../src/nats/command-protocol.ts';
import { connectNats, isPermissionError } from '../../src/nats/connection.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { CLIENT, REPO_NATS_CONF, startNatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { natsWorker, type CliCtx } from './cli-suite.ts';
import { rejection, subscriptionEnd } from './helpers.ts';

const s = suite<CliCtx & { acme: SessiondClient; globex: SessiondClient }>('NATS tenants: per-tenant users');
const PASS = {
  acme: 'acme-tenant-secret-0123456789',
  globex: 'globex-tenant-secret-0123456789',
  umbrella: 'umbrella-tenant-secret-0123456789',
  acmeReader: 'acme-reader-secret-0123456789',
};

s.before(async (ctx) => {
  ctx.tmp = tempDir();
  ctx.workers = [] as LongRunning[];
  // nats.conf with the users `sessiond setup --tenant` prints, as an operator pastes them
  let conf = readFileSync(REPO_NATS_CONF, 'utf8');
  for (const tenant of ['acme', 'globex'] as const) {
    const printed = await runCli(['setup', '--tenant', tenant, '--tenant-password', PASS[tenant]]);
    assert.is(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, `sessiond.t.${tenant}.cmd.>`);
    conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${printed.stdout}`);
  }
  // a tenant user that may only read (--tenant-scopes, as a gateway token's scopes)
  const reader = await runCli(['setup', '--tenant', 'umbrella', '--tenant-password', PASS.umbrella, '--tenant-scopes', 'read']);
  assert.is(reader.code, 0, reader.stderr);
  conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${reader.stdout}`);
  // a second user of acme that may only read (--tenant-user: a tenant may have several users)
  const acmeReader = await runCli([
    'setup',
    '--tenant',
    'acme',
    '--tenant-user',
    'acme-reader',
    '--tenant-password',
    PASS.acmeReader,
    '--tenant-scopes',
    'read',
  ]);
  assert.is(acmeReader.code, 0, acmeReader.stderr);
  conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${acmeReader.stdout}`);
  const file = ctx.tmp.file('nats-tenants.conf');
  writeFileSync(file, conf);
  ctx.server = await startNatsServer({ config: file });
  // each tenant user may fork once an hour here (a quota the worker enforces on its tenants' commands)
  await natsWorker(ctx, 'tenants-worker.db', 1, ['--tenant-limit', 'forksPerHour=1']);
  const as = (tenant: 'acme' | 'globex') =>
    SessiondClient.connect({ tenant, connection: { servers: ctx.server.url, user: `tenant-${tenant}`, pass: PASS[tenant] } });
  ctx.acme = await as('acme');
  ctx.globex = await as('globex');
});

s.after(async (ctx) => {
  await ctx.acme?.close();
  await ctx.globex?.close();
  for (const w of ctx.workers)
    if (w.child.exitCode === null) {
      w.child.kill('SIGKILL');
      await w.exited;
    }
  await ctx.server?.dispose();
  ctx.tmp?.remove();
});

const notFound = async (p: Promise<unknown>, what: string) => {
  const err = await rejection(p);
  assert.ok(
    isSessiondError(err) && [ErrorCode.NotFound, CommandFailureCode.UnknownSession].includes((err as { code: string }).code as never),
    `${what}: ${String(err)}`,
  );
  assert.not.match(String(err), 'acme', `${what}: nothing of the owner`);
};

s('a tenant admits and reads its own sessions; the other gets not_found for them on every command, even naming the ids', async ({ acme, globex, server }) => {
  const receipt = await acme.admit('ses_t_1', { prompt: 'acme’s secret plan' });
  assert.is(receipt.created, true);
  await waitFor(async () => (await acme.status('ses_t_1')).state === 'settled', { what: 'the turn settled', timeoutMs: 30_000 });
  assert.is((await acme.status('ses_t_1')).ownedBy, 'acme', 'the owner is the subject’s tenant');
  await waitFor(async () => (await acme.list({ idPrefix: 'ses_t_' })).sessions.length === 1, { what: 'listed', timeoutMs: 10_000 });

  await notFound(globex.status('ses_t_1'), 'status');
  await notFound(globex.admit('ses_t_1', { prompt: 'let me in' }), 'admit');
  await notFound(globex.wake('ses_t_1'), 'wake');
  await notFound(globex.cancel('ses_t_1'), 'cancel');
  await notFound(globex.approve('ses_t_1', 'call_1'), 'approve');
  await notFound(globex.resolve('ses_t_1', 'payment', { data: 1 }), 'resolve');
  await notFound(globex.tag('ses_t_1', { mine: 'now' }), 'tag');
  await notFound(globex.dropPending('ses_t_1'), 'drop');
  await notFound(globex.fork('ses_t_1', 'ses_t_stolen'), 'fork');
  await notFound(globex.events('ses_t_1'), 'events');
  assert.equal(await globex.replay({ sessionId: 'ses_t_1' }), [], 'replay reads nothing of it');
  // its owner reads the history, through the workers (a tenant has no JetStream), page by page
  const history = await acme.events('ses_t_1');
  assert.equal(
    history.map((e) => e.seq),
    history.map((_, i) => i + 1),
    'every event, in order',
  );
  assert.is(history[0]!.type, 'input.admitted');
  assert.is(history.at(-1)!.type, 'execution.settled');
  assert.equal(
    (await acme.events('ses_t_1', { afterSeq: 2, limit: 2 })).map((e) => e.seq),
    [3, 4],
  );
  assert.equal(await acme.replay({ sessionId: 'ses_t_1', afterSeq: history.length }), [], 'nothing after the last');
  assert.equal((await globex.list({ idPrefix: 'ses_t_' })).sessions, [], 'nor listed');
  // the body's owner is not the tenant's say: the subject is
  const raw = await connectNats({ servers: server.url, user: 'tenant-globex', pass: PASS.globex, inboxPrefix: subjects.tenantInbox('globex') });
  try {
    const reply = await raw.request(
      subjects.tenantCommand('globex', 'admit'),
      new TextEncoder().encode(JSON.stringify({ sessionId: 'ses_t_1', prompt: 'x', owner: 'acme' })),
      {
        timeout: 5000,
      },
    );
    const body = JSON.parse(new TextDecoder().decode(reply.data)) as { ok: boolean; error?: { code: string } };
    assert.equal([body.ok, body.error?.code], [false, 'not_found'], 'an owner in the body changes nothing');
  } finally {
    await raw.close();
  }
  assert.is((await acme.status('ses_t_1')).pendingCount, 0, 'nothing of globex got in');
});

s('the server refuses a tenant the other’s command subjects, the live subjects and JetStream', async ({ server, globex }) => {
  // a client that claims to be acme, connected as globex: nats.conf refuses its commands
  const impostor = await SessiondClient.connect({
    tenant: 'acme',
    connection: { servers: server.url, user: 'tenant-globex', pass: PASS.globex, inboxPrefix: subjects.tenantInbox('globex') },
  });
  try {
    const err = await rejection(impostor.status('ses_t_1'));
    assert.ok(isCommandError(err, CommandFailureCode.PermissionDenied), `permission_denied, got ${String(err)}`);
  } finally {
    await impostor.close();
  }
  const refusedClientSide = await rejection(globex.replay({}));
  assert.match(String(refusedClientSide), 'has no JetStream');
  const nc = await connectNats({ servers: server.url, user: 'tenant-globex', pass: PASS.globex, inboxPrefix: subjects.tenantInbox('globex') });
  try {
    for (const subject of [subjects.liveFilter({ sessionId: 'ses_t_1' }), subjects.allLive, subjects.tenantLiveFilter('acme'), subjects.allTenantLive]) {
      const ended = await subscriptionEnd(nc, subject);
      assert.ok(isPermissionError(ended), `the server refuses ${subject}, got ${String(ended)}`);
    }
    const js = await rejection(nc.request('$JS.API.STREAM.INFO.SESSIOND_EVENTS', new Uint8Array(), { timeout: 5000 }));
    assert.ok(isPermissionError(js), `the server refuses JetStream, got ${String(js)}`);
  } finally {
    await nc.close();
  }
  // the client user (trusted) still reaches every session
  const trusted = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  try {
    assert.is((await trusted.status('ses_t_1')).ownedBy, 'acme');
  } finally {
    await trusted.close();
  }
});

s('a tenant follows its own session (history, then live on its own subjects); another tenant sees none of it', async ({ acme, globex, server }) => {
  const seen: { acme: number[]; globexLive: string[]; acmeLive: string[] } = { acme: [], globexLive: [], acmeLive: [] };
  const watching = await globex.subscribe({}, (e) => {
    seen.globexLive.push(`${e.sessionId} ${e.type}`);
  });
  const acmeLive = await acme.subscribe({}, (e) => {
    seen.acmeLive.push(`${e.sessionId} ${e.type}`);
  });
  const following = await acme.follow('ses_t_live', (e) => {
    seen.acme.push(e.seq);
  });
  try {
    await acme.admit('ses_t_live', { prompt: 'followed as acme' });
    await waitFor(async () => (await acme.status('ses_t_live')).state === 'settled', { what: 'the turn settled', timeoutMs: 30_000 });
    const head = (await acme.status('ses_t_live')).seq;
    await waitFor(() => seen.acme.length === head, { what: `follow to deliver ${head} events`, timeoutMs: 10_000 });
    assert.equal(
      seen.acme,
      Array.from({ length: head }, (_, i) => i + 1),
      'each committed event once, in order',
    );
    assert.ok(seen.acmeLive.includes('ses_t_live text.delta'), `live-only events too (text deltas): ${seen.acmeLive.join(', ')}`);
    // a globex session goes on globex's subjects, and only there
    await globex.admit('ses_t_glive', { prompt: 'globex speaking' });
    await waitFor(() => seen.globexLive.some((l) => l === 'ses_t_glive execution.settled'), { what: 'globex to see its own turn', timeoutMs: 30_000 });
    assert.equal(
      seen.globexLive.filter((l) => !l.startsWith('ses_t_glive ')),
      [],
      'nothing of acme on globex’s subjects',
    );
    assert.equal(
      seen.acmeLive.filter((l) => l.startsWith('ses_t_glive ')),
      [],
      'nor the reverse: acme, subscribed to all its live subjects, sees nothing of globex',
    );
  } finally {
    await following.close();
    await acmeLive.close();
    await watching.close();
  }
  // the trusted client still sees every session on sessiond.live.>
  const trusted = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  try {
    assert.is((await trusted.events('ses_t_live')).length, seen.acme.length, 'the same history from the stream');
  } finally {
    await trusted.close();
  }
});

s(
  'a worker enforces its --tenant-limit on a tenant user: a second fork in the hour is limit_exceeded naming the quota; another tenant is counted apart',
  async ({ acme, globex }) => {
    await acme.admit('ses_t_q', { prompt: 'to fork' });
    await waitFor(async () => (await acme.status('ses_t_q')).state === 'settled', { what: 'the turn settled', timeoutMs: 30_000 });
    assert.is((await acme.fork('ses_t_q', 'ses_t_q_f1')).created, true);
    assert.is((await acme.fork('ses_t_q', 'ses_t_q_f1')).created, false, 'the same fork again uses nothing');
    const err = await rejection(acme.fork('ses_t_q', 'ses_t_q_f2'));
    assert.ok(isSessiondError(err, ErrorCode.LimitExceeded), String(err));
    assert.match(String(err), 'tenant acme is at its limit forksPerHour = 1');
    assert.match(String(err), '--tenant-limit forksPerHour=N');
    await notFound(acme.status('ses_t_q_f2'), 'nothing was made');
    await globex.admit('ses_t_q_g', { prompt: 'to fork' });
    await waitFor(async () => (await globex.status('ses_t_q_g')).state === 'settled', { what: 'the turn settled', timeoutMs: 30_000 });
    assert.is((await globex.fork('ses_t_q_g', 'ses_t_q_g1')).created, true, 'globex has its own count');
  },
);

s('two tenant users racing to create the same 20 ids: each id admits one, the other gets not_found', async ({ acme, globex }) => {
  const ids = Array.from({ length: 20 }, (_, i) => `ses_t_race${i}`);
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => 'in',
      (err: unknown) => (isSessiondError(err) && err.code === ErrorCode.NotFound ? 'not_found' : String(err)),
    );
  const results = await Promise.all(
    ids.map(async (id) => [id, ...(await Promise.all([outcome(acme.admit(id, { prompt: `a-${id}` })), outcome(globex.admit(id, { prompt: `g-${id}` }))]))]),
  );
  for (const [id, a, g] of results) {
    assert.equal([a, g].sort(), ['in', 'not_found'], `${id}: exactly one tenant gets in (acme ${a}, globex ${g})`);
    const winner = a === 'in' ? acme : globex;
    const loser = a === 'in' ? globex : acme;
    assert.is((await winner.status(id!)).ownedBy, a === 'in' ? 'acme' : 'globex');
    await notFound(loser.status(id!), `${id}: the loser's status`);
  }
});

s('a tenant user with --tenant-scopes read may read its sessions, and the server refuses its other commands', async ({ server }) => {
  const reader = await SessiondClient.connect({
    tenant: 'umbrella',
    connection: { servers: server.url, user: 'tenant-umbrella', pass: PASS.umbrella },
  });
  try {
    assert.equal((await reader.list({ idPrefix: 'ses_u_' })).sessions, [], 'list is read');
    await notFound(reader.status('ses_u_1'), 'status is read: answered by the worker');
    for (const [what, send] of [
      ['admit', () => reader.admit('ses_u_1', { prompt: 'hello' })],
      ['cancel', () => reader.cancel('ses_u_1')],
      ['resolve', () => reader.resolve('ses_u_1', 'payment', { data: 1 })],
    ] as const) {
      const err = await rejection(send());
      assert.ok(isCommandError(err, CommandFailureCode.PermissionDenied), `${what}: permission_denied by the server, got ${String(err)}`);
    }
  } finally {
    await reader.close();
  }
  const none = await runCli(['setup', '--tenant', 'umbrella', '--tenant-scopes', 'admin']);
  assert.is(none.code, 2);
  assert.match(none.stderr, '--tenant-scopes admin allows no command');
  const unknown = await runCli(['setup', '--tenant', 'umbrella', '--tenant-scopes', 'read,root']);
  assert.match(unknown.stderr, '--tenant-scopes read,root: unknown scope "root"');
});

s('a second user of a tenant (--tenant-user) reaches the same sessions with its own scopes', async ({ acme, server }) => {
  await acme.admit('ses_t_two', { prompt: 'seen by both users' });
  const reader = await SessiondClient.connect({ tenant: 'acme', connection: { servers: server.url, user: 'acme-reader', pass: PASS.acmeReader } });
  try {
    assert.is((await reader.status('ses_t_two')).ownedBy, 'acme', 'the same tenant: its sessions');
    assert.ok((await reader.events('ses_t_two')).length >= 1);
    const err = await rejection(reader.admit('ses_t_two', { prompt: 'may not' }));
    assert.ok(isCommandError(err, CommandFailureCode.PermissionDenied), `read only: ${String(err)}`);
  } finally {
    await reader.close();
  }
  const bad = await runCli(['setup', '--tenant', 'acme', '--tenant-user', 'acme reader']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, 'Invalid user name "acme reader"');
});

s('setup --tenant refuses a name that is not a subject token, and a password without a tenant', async () => {
  const bad = await runCli(['setup', '--tenant', 'acme.corp']);
  assert.is(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, 'Invalid tenant "acme.corp"');
  const lone = await runCli(['setup', '--tenant-password', 'x']);
  assert.is(lone.code, 2, lone.stderr);
  assert.match(lone.stderr, '--tenant-password, --tenant-scopes and --tenant-user go with --tenant NAME');
  const made = await runCli(['setup', '--tenant', 'initech']);
  assert.match(made.stdout, /password: "[0-9a-f]{48}"/, 'a new random password when none is given');
  assert.match(made.stdout, '"sessiond.t.initech.live.>"', 'its live subjects: it may read');
  const writer = await runCli(['setup', '--tenant', 'initech', '--tenant-scopes', 'prompt']);
  assert.not.match(writer.stdout, 'sessiond.t.initech.live', 'no read scope: no live subjects');
});

s.run();
