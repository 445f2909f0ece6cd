// The raw OCC publish of the cluster benchmark (bench/lib/occ-publish.ts): a refusal while the
// subject is where the publisher expects (nats-server's window between an ack and the end of its
// in-process bookkeeping on a replicated stream) is sent again and counted; a real mismatch says
// which subject and both sequences. The refusal itself, on a real server: one server's 10071.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { JetStreamApiError, jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { occPublish, type OccTarget } from '../../bench/lib/occ-publish.ts';
import { BENCH_USER } from '../../bench/nats.ts';
import { startNatsServer } from '../../src/testing/nats-server.ts';

const test = suite('bench raw OCC publish');

const refusal = (code: number) => new JetStreamApiError({ code: 400, err_code: code, description: 'wrong last sequence' });

/** A subject whose last stream sequence is `at`; publish refuses the first `refusals` attempts with `code`. */
function fakeTarget(at: number, refusals: number, code = 10164): OccTarget & { published: number[] } {
  let left = refusals;
  const published: number[] = [];
  return {
    published,
    publish: async (_subject, _data, last) => {
      if (left-- > 0) throw refusal(code);
      if (last !== at) throw refusal(10071);
      published.push(last);
      return at + 7;
    },
    lastOf: async () => at,
  };
}

test('occ publish - a refusal while the subject is where it expects is sent again and counted', async () => {
  for (const code of [10164, 10071]) {
    const target = fakeTarget(41, 1, code);
    const counts = { resent: 0 };
    assert.is(await occPublish(target, 'sessiond.bench.s1', new Uint8Array(3), 41, counts), 48);
    assert.equal(target.published, [41]);
    assert.is(counts.resent, 1);
  }
});

test('occ publish - a real mismatch names the subject and both sequences', async () => {
  const counts = { resent: 0 };
  const err = await occPublish(fakeTarget(9, 0), 'sessiond.bench.s2', new Uint8Array(3), 4, counts).then(
    () => undefined,
    (e: Error) => e,
  );
  assert.ok(err, 'refused');
  assert.match(err!.message, 'raw OCC publish on sessiond.bench.s2 refused (10071 wrong last sequence)');
  assert.match(err!.message, "it expected the subject's last stream sequence 4, the stream holds 9");
  assert.is(counts.resent, 0);
});

test('occ publish - a refusal that does not pass gives up, and other errors are not retried', async () => {
  const err = await occPublish(fakeTarget(3, 100), 'sessiond.bench.s3', new Uint8Array(1), 3, { resent: 0 }).then(
    () => undefined,
    (e: Error) => e,
  );
  assert.match(err?.message ?? '', 'refused 11 times in a row');
  let calls = 0;
  const other: OccTarget = {
    publish: async () => {
      calls++;
      throw refusal(10059);
    },
    lastOf: async () => 0,
  };
  const notFound = await occPublish(other, 's', new Uint8Array(1), 0, { resent: 0 }).catch((e: unknown) => e);
  assert.ok(notFound instanceof JetStreamApiError && notFound.code === 10059);
  assert.is(calls, 1);
});

test('occ publish - on a real server: a subject that already holds a message is a mismatch, its last sequence read back', async () => {
  const server = await startNatsServer({ extraUsers: [BENCH_USER] });
  const nc = await connect({ servers: server.url, ...BENCH_USER });
  try {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    await jsm.streams.add({ name: 'BENCH_OCC_TEST', subjects: ['sessiond.bench.occ.>'], storage: StorageType.Memory });
    const target: OccTarget = {
      publish: async (subject, data, last) => (await js.publish(subject, data, { expect: { lastSubjectSequence: last } })).seq,
      lastOf: async (subject) => (await jsm.streams.getMessage('BENCH_OCC_TEST', { last_by_subj: subject }))?.seq ?? 0,
    };
    const counts = { resent: 0 };
    await js.publish('sessiond.bench.occ.other', new Uint8Array(1));
    const first = await occPublish(target, 'sessiond.bench.occ.s', new Uint8Array(1), 0, counts);
    assert.is(await occPublish(target, 'sessiond.bench.occ.s', new Uint8Array(1), first, counts), first + 1);
    const err = await occPublish(target, 'sessiond.bench.occ.s', new Uint8Array(1), 0, counts).catch((e: Error) => e);
    assert.instance(err, Error);
    assert.match((err as Error).message, `refused (10071 wrong last sequence`);
    assert.match((err as Error).message, `expected the subject's last stream sequence 0, the stream holds ${first + 1}`);
    assert.is(counts.resent, 0);
  } finally {
    await nc.close();
    await server.dispose();
  }
});

test.run();
