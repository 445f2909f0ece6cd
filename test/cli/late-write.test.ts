/**
 * Issue 19, finding 5: a write decided under a live lease can be stored after the lease expired (an
 * append retried through an outage, a worker frozen between deciding and appending). Fencing still
 * accepts it, so it is safe, but its `time` is the decision: only the commit time shows it landed
 * late. A real worker process is frozen by the OS (SIGSTOP) after deciding a renewal and before
 * appending it, kept frozen past its lease, and resumed; `sessiond check` then warns of the late
 * renewal with its lag, and still exits 0 (a warning, not a violation).
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { admitInput } from '../../src/input/admit.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { closeSharedFiles, sharedFile } from '../support/processes.ts';
import { runCli } from '../support/cli.ts';

const LEASE_MS = 1500;
const LATE_BY_MS = 500;

/** The process state letter from /proc (T: stopped by a signal). */
const stateOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];

test.after.each(closeSharedFiles);

test('a renewal decided under a live lease and committed after it expired: check warns with the lag, exit 0', async () => {
  const f = sharedFile('late-write');
  const ses = 'ses_late';
  await admitInput(f.handler, ses, { id: 'inp_late', prompt: 'hello there', wake: false });
  const worker = f.spawn({ mode: 'hold', sessions: [ses], leaseMs: LEASE_MS, heartbeatMs: 500, echoDelayMs: 60_000, stopBeforeAppend: 'execution.renewed' });
  await worker.waitForLine((l) => l.startsWith('STOPPING '));
  const pid = worker.child.pid!;
  await waitFor(() => stateOf(pid) === 'T', { what: 'the worker to be stopped by SIGSTOP' });
  // the lease the renewal was decided under: the claim's (nothing else was written since)
  const claim = (await f.log.readSession(ses)).find((e) => e.type === 'execution.claimed')!;
  assert.ok(claim, 'the worker claimed the session before it stopped');
  const expiresAt = (claim.payload as { expiresAt: number }).expiresAt;
  await waitFor(() => Date.now() > expiresAt + LATE_BY_MS, {
    timeoutMs: LEASE_MS + LATE_BY_MS + 10_000,
    intervalMs: 50,
    what: "the frozen worker's lease to be expired",
  });
  worker.child.kill('SIGCONT');
  await waitFor(async () => (await f.log.readSession(ses)).some((e) => e.type === 'execution.renewed'), { what: 'the renewal to be committed after SIGCONT' });
  worker.child.kill('SIGKILL');
  await worker.exited;

  const renewal = (await f.log.readSession(ses)).find((e) => e.type === 'execution.renewed')!;
  assert.ok(renewal.time < expiresAt, 'decided while the lease was live');
  assert.ok(renewal.committedAt! > expiresAt + LATE_BY_MS, `committed after the lease expired (${renewal.committedAt} vs ${expiresAt})`);

  const r = await runCli(['check', '--db', f.file, '--safety-only']);
  assert.is(r.code, 0, `a warning does not fail check: ${r.stdout}${r.stderr}`);
  const line = r.stdout.split('\n').find((l) => l.startsWith(`WARNING late_write at seq ${renewal.seq}:`));
  assert.ok(line, `check warns of the late renewal; got:\n${r.stdout}`);
  assert.match(
    line!,
    `execution.renewed of execution ${claim.payload.executionId} was decided at ${new Date(renewal.time).toISOString()}, while its lease was live, but committed at ${new Date(renewal.committedAt!).toISOString()}, ${renewal.committedAt! - expiresAt} ms after the lease expired at ${new Date(expiresAt).toISOString()}`,
  );
  assert.match(r.stdout, /1 write was committed after the lease it was decided under had expired \(up to \d+ ms late\)/);
  assert.match(r.stdout, 'no violations');
});

test.run();
