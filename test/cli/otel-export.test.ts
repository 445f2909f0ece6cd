/**
 * `sessiond start` with the standard OTEL_* variables: a real worker exports the spans of its turns
 * over OTLP (http/json and http/protobuf) to a collector stand-in (an HTTP server that records what
 * it is sent); a collector that never answers never holds a turn, and what the bounded queue drops
 * is counted in the worker's metrics. An unsupported protocol is refused saying what to set.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { freePort } from '../support/mcp.ts';
import { waitFor } from '../../src/testing/wait.ts';

interface Received {
  path: string;
  contentType: string;
  body: Buffer;
}

/** An HTTP server that records every request; `answer: false` never answers (a collector gone silent). */
async function collector(answer = true): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      if (answer) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

const closeServer = (s: Server) => {
  s.closeAllConnections();
  return new Promise((r) => s.close(r));
};

/** The spans of OTLP/JSON bodies: name and attributes as plain values. */
function jsonSpans(received: Received[]): { name: string; attrs: Record<string, unknown>; service: unknown }[] {
  const out: { name: string; attrs: Record<string, unknown>; service: unknown }[] = [];
  for (const r of received) {
    const body = JSON.parse(r.body.toString('utf8'));
    for (const rs of body.resourceSpans ?? []) {
      const service = rs.resource.attributes.find((a: { key: string }) => a.key === 'service.name')?.value.stringValue;
      for (const ss of rs.scopeSpans)
        for (const s of ss.spans) {
          const attrs: Record<string, unknown> = {};
          for (const a of s.attributes) attrs[a.key] = Object.values(a.value)[0];
          out.push({ name: s.name, attrs, service });
        }
    }
  }
  return out;
}

const otel = (url: string, protocol: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: url,
  OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
  OTEL_SERVICE_NAME: 'sessiond-under-test',
  OTEL_BSP_SCHEDULE_DELAY: '50',
});

test('http/json: the turn, its claim and its steps reach the collector, named by the conventions', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const c = await collector();
  const worker = startCli(['start', '--db', db], { env: otel(c.url, 'http/json') });
  await worker.waitFor('is running');
  const prompt = await runCli(['prompt', 'ses_traced', 'hello there', '--db', db]);
  assert.is(prompt.code, 0, prompt.stdout + prompt.stderr);
  await worker.waitFor('ses_traced  turn succeeded');
  await waitFor(() => jsonSpans(c.received).some((s) => s.name === 'invoke_agent sessiond'), { what: 'the turn span at the collector', timeoutMs: 10_000 });
  assert.ok(c.received.every((r) => r.path === '/v1/traces' && r.contentType.startsWith('application/json')));
  const spans = jsonSpans(c.received);
  const turn = spans.find((s) => s.name === 'invoke_agent sessiond')!;
  assert.is(turn.service, 'sessiond-under-test');
  assert.is(turn.attrs['gen_ai.operation.name'], 'invoke_agent');
  assert.is(turn.attrs['gen_ai.conversation.id'], 'ses_traced');
  assert.is(turn.attrs['sessiond.outcome'], 'succeeded');
  await waitFor(() => jsonSpans(c.received).some((s) => s.name === 'sessiond.claim' && s.attrs['sessiond.session.id'] === 'ses_traced'), {
    what: 'the claim span',
    timeoutMs: 10_000,
  });
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  await closeServer(c.server);
  tmp.remove();
});

test('http/protobuf (the default): the spans go as protobuf to /v1/traces', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const c = await collector();
  const worker = startCli(['start', '--db', db], { env: { ...otel(c.url, 'http/protobuf') } });
  await worker.waitFor('is running');
  await runCli(['prompt', 'ses_proto', 'hello', '--db', db]);
  await worker.waitFor('ses_proto  turn succeeded');
  await waitFor(() => c.received.some((r) => r.body.includes('invoke_agent sessiond')), { what: 'the turn span as protobuf', timeoutMs: 10_000 });
  const sent = c.received.find((r) => r.body.includes('invoke_agent sessiond'))!;
  assert.is(sent.path, '/v1/traces');
  assert.is(sent.contentType, 'application/x-protobuf');
  assert.ok(sent.body.includes('ses_proto'));
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  await closeServer(c.server);
  tmp.remove();
});

test('a collector that never answers: turns run as before, spans past the queue are dropped and counted', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const c = await collector(false);
  const port = await freePort();
  const worker = startCli(['start', '--db', db, '--metrics', String(port)], {
    env: { ...otel(c.url, 'http/json'), OTEL_BSP_MAX_QUEUE_SIZE: '2', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1' },
  });
  await worker.waitFor('is running');
  for (let i = 0; i < 3; i++) {
    const p = await runCli(['prompt', 'ses_silent', `turn ${i}`, '--db', db]);
    assert.is(p.code, 0, p.stdout + p.stderr);
  }
  await worker.waitFor(/(ses_silent {2}turn succeeded[\s\S]*){3}/, 15_000);
  const dropped = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return Number(/^sessiond_trace_spans_dropped_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
  };
  await waitFor(async () => (await dropped()) > 0, { what: 'dropped spans counted', timeoutMs: 10_000 });
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  await closeServer(c.server);
  tmp.remove();
});

test('an unsupported OTLP protocol is refused, saying which to use', async () => {
  const tmp = tempDir();
  const r = await runCli(['status', '--db', tmp.file('w.db')], {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
  });
  assert.is.not(r.code, 0);
  assert.match(r.stderr, 'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported: sessiond exports traces over http/protobuf (the default) or http/json');
  tmp.remove();
});

test.run();
