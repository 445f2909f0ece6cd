// A caller's W3C trace context over NATS: the client sends an admit's traceparent as the message
// header, the worker stores it on input.admitted (the parent of the turn's span); a raw request
// with the header alone works the same, and a malformed one is ignored (admitted, nothing stored).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { headers } from '@nats-io/transport-node';
import { encodeJson, decodeJson } from '../../src/nats/command-protocol.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { natsWorld, sessionId } from './helpers.ts';

const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

test('an admit carries its traceparent in the message header to input.admitted', async () => {
  const world = await natsWorld();
  try {
    const { engine, log } = await world.engine();
    await world.serve(engine);
    const client = await world.client();
    const id = sessionId('trace');
    await client.admit(id, { prompt: 'traced', wake: false, traceparent: CALLER });
    const admitted = async (sid: string) => (await log.readSession(sid)).filter((e) => e.type === 'input.admitted').map((e) => e.payload.traceparent);
    assert.equal(await admitted(id), [CALLER]);

    // the header alone (what any NATS client with OpenTelemetry propagation sends)
    const nc = await world.connect(CLIENT);
    const raw = async (sid: string, traceparent: string) => {
      const h = headers();
      h.set('traceparent', traceparent);
      const msg = await nc.request(subjects.command('admit'), encodeJson({ sessionId: sid, prompt: 'raw', wake: false }), { timeout: 5000, headers: h });
      return decodeJson(msg.data) as { ok: boolean };
    };
    const other = sessionId('trace');
    assert.ok((await raw(other, CALLER)).ok);
    assert.equal(await admitted(other), [CALLER]);
    const bad = sessionId('trace');
    assert.ok((await raw(bad, 'not-a-traceparent')).ok, 'a malformed one is never an error');
    assert.equal(await admitted(bad), [undefined]);
  } finally {
    await world.dispose();
  }
});

test.run();
