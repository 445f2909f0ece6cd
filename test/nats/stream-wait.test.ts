/**
 * A worker that opens the events stream while JetStream does not answer (a leader election, a
 * restart) keeps asking, then goes on; past its deadline it fails as unavailable (exit 69), never as
 * a usage mistake. A stand-in JetStream manager plays the server (no nats-server needed).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { errors as natsErrors } from '@nats-io/transport-node';
import { JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { ensureEventStream, eventStreamConfig } from '../../src/nats/stream.ts';
import { ErrorCode } from '../../src/errors.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { exitCodeFor } from '../../src/cli/exit.ts';

/** A JetStreamManager whose stream requests time out `silent` times, then find the stream. */
function jetstreamAfter(silent: number): { jsm: JetStreamManager; asked: () => number } {
  let asked = 0;
  const info = { config: eventStreamConfig(), state: { messages: 0 }, cluster: undefined } as unknown as StreamInfo;
  const jsm = {
    streams: {
      info: async () => {
        asked++;
        if (asked <= silent) throw new natsErrors.TimeoutError();
        return info;
      },
    },
  } as unknown as JetStreamManager;
  return { jsm, asked: () => asked };
}

test('stream - requests JetStream does not answer are sent again until it does', async () => {
  const { jsm, asked } = jetstreamAfter(3);
  const info = await ensureEventStream(jsm, { waitMs: 10_000 });
  assert.is(info.config.name, 'SESSIOND_EVENTS');
  assert.is(asked(), 4, 'asked again after each timeout');
});

test('stream - past the deadline the stream is unavailable (retry later), not a usage mistake', async () => {
  const { jsm } = jetstreamAfter(Number.POSITIVE_INFINITY);
  const err = await expectCode(ensureEventStream(jsm, { waitMs: 300 }), ErrorCode.Unavailable, 'JetStream did not answer for 300 ms');
  assert.match(err.message, 'retry later');
  assert.is(exitCodeFor(err), 69);
});

/** A JetStreamManager with no stream whose creation is refused for placement `refusals` times with `why`. */
function placementRefused(refusals: number, why: string): { jsm: JetStreamManager; adds: () => number } {
  let adds = 0;
  const jsm = {
    streams: {
      info: async () => {
        throw new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' });
      },
      add: async (config: StreamConfig) => {
        adds++;
        if (adds <= refusals) throw new JetStreamApiError({ code: 400, err_code: 10005, description: `no suitable peers for placement, ${why}` });
        return { config, state: { messages: 0 }, cluster: { leader: 'n1' } } as unknown as StreamInfo;
      },
    },
  } as unknown as JetStreamManager;
  return { jsm, adds: () => adds };
}

test('stream - setup on a cluster still forming ("peer offline") creates the stream once the peers are current', async () => {
  const { jsm, adds } = placementRefused(2, 'peer offline');
  const info = await ensureEventStream(jsm, { manage: true, replicas: 3, serverVersion: '2.12.0', waitMs: 10_000 });
  assert.is(info.config.num_replicas, 3);
  assert.is(adds(), 3, 'asked again after each placement refusal');
});

test('stream - a placement that cannot be met (tags not matched) is refused at once, not waited out', async () => {
  const { jsm, adds } = placementRefused(Number.POSITIVE_INFINITY, "tags not matched ['disk:ssd']");
  const err = await expectCode(
    ensureEventStream(jsm, { manage: true, replicas: 3, serverVersion: '2.12.0', waitMs: 10_000 }),
    ErrorCode.InvalidOption,
    'tags not matched',
  );
  assert.is(adds(), 1);
  assert.match(err.message, 'Could not create JetStream stream SESSIOND_EVENTS');
});

test.run();
