/**
 * When the worker and the CLI load the OpenTelemetry SDK (src/observability/otel-sdk.ts): only when
 * the standard OTEL_* variables ask for traces, over http/protobuf or http/json; otherwise nothing
 * is registered and the engine's spans are not recorded. (The export itself, with real workers:
 * test/cli/otel-export.test.ts and test/cli/jaeger-trace.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { trace } from '@opentelemetry/api';
import { otlpProtocol, startTracing, tracingAsked } from '../../src/observability/otel-sdk.ts';

test('asked for by an OTLP endpoint or OTEL_TRACES_EXPORTER=otlp; off when unset, disabled or none', () => {
  assert.is(tracingAsked({}), false);
  assert.is(tracingAsked({ OTEL_SERVICE_NAME: 'x' }), false, 'a service name alone exports nothing');
  assert.is(tracingAsked({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), true);
  assert.is(tracingAsked({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }), true);
  assert.is(tracingAsked({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
  assert.is(tracingAsked({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), false);
  assert.is(tracingAsked({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
});

test('the protocol: http/protobuf by default, http/json, the traces variable first; grpc refused saying what to set', () => {
  assert.is(otlpProtocol({}), 'http/protobuf');
  assert.is(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }), 'http/json');
  assert.is(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }), 'http/json');
  assert.throws(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /http\/protobuf \(the default\) or http\/json/);
});

test('not asked: nothing is registered, a span is the no-op', async () => {
  assert.is(await startTracing({ OTEL_SERVICE_NAME: 'x' }), undefined);
  const span = trace.getTracer('sessiond').startSpan('probe');
  assert.is(span.isRecording(), false);
  span.end();
});

test('asked: the SDK is registered (spans are recorded) until shutdown', async () => {
  const tracing = await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
  assert.ok(tracing);
  assert.is(tracing.protocol, 'http/json');
  const span = trace.getTracer('sessiond').startSpan('probe');
  assert.is(span.isRecording(), true);
  await tracing.shutdown(); // the span never ended: nothing to send to the port nobody listens on
  assert.is(trace.getTracer('sessiond').startSpan('after').isRecording(), false);
});

test.run();
