/**
 * The OpenTelemetry SDK and its OTLP exporter, for the worker and the CLI: loaded (dynamic import) only
 * when the standard `OTEL_*` variables ask for traces; otherwise the engine's spans stay the API's
 * no-ops. The variables, and why a slow collector never holds a turn: docs/operating.md#traces.
 */
import { trace, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ErrorCode, SessiondError } from '../errors.ts';
import { traceCounts } from './trace-counts.ts';

export type Env = Record<string, string | undefined>;

export interface Tracing {
  /** `http/protobuf` or `http/json`. */
  readonly protocol: string;
  /** Exports what is queued (at most a few seconds), then stops. */
  shutdown(): Promise<void>;
}

export const DEFAULT_MAX_QUEUE = 2048;
/** How long a shutdown waits for the queued spans to be exported. */
export const SHUTDOWN_MS = 3_000;

/** Whether the environment asks for exported traces. */
export function tracingAsked(env: Env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((s) => s.trim().toLowerCase());
  if (exporters.includes('none')) return false;
  return exporters.includes('otlp') || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) || Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** The OTLP protocol asked for; anything but the two HTTP ones is refused saying what to set. */
export function otlpProtocol(env: Env): 'http/protobuf' | 'http/json' {
  const raw = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  throw new SessiondError(
    ErrorCode.InvalidOption,
    `OTEL_EXPORTER_OTLP_PROTOCOL=${raw} is not supported: sessiond exports traces over http/protobuf (the default) or http/json. Set one of them, or unset the variable.`,
  );
}

/** The queue bound (`OTEL_BSP_MAX_QUEUE_SIZE`); a value that is not a whole number > 0 is refused. */
function maxQueue(env: Env): number {
  const raw = env.OTEL_BSP_MAX_QUEUE_SIZE?.trim();
  if (!raw) return DEFAULT_MAX_QUEUE;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new SessiondError(ErrorCode.InvalidOption, `OTEL_BSP_MAX_QUEUE_SIZE=${raw}: use a whole number of spans >= 1.`);
  return n;
}

/** Registers the SDK with an OTLP exporter when the environment asks for it (see the header); undefined otherwise. */
export async function startTracing(env: Env): Promise<Tracing | undefined> {
  if (!tracingAsked(env)) return undefined;
  const protocol = otlpProtocol(env);
  const limit = maxQueue(env);
  const [{ BasicTracerProvider, BatchSpanProcessor }, { AsyncLocalStorageContextManager }, resources, exporterModule] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/resources'),
    protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const exporter = counted(new exporterModule.OTLPTraceExporter());
  const resource = resources
    .detectResources({ detectors: [resources.envDetector] })
    .merge(resources.resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME?.trim() || 'sessiond' }));
  const batch = new BatchSpanProcessor(exporter.exporter, { maxQueueSize: limit });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [bounded(batch, exporter, limit)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const { context } = await import('@opentelemetry/api');
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  const tracing: Tracing = {
    protocol,
    async shutdown() {
      if (current === tracing) current = undefined;
      // a collector that does not answer holds the exit at most SHUTDOWN_MS
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([provider.shutdown().catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, SHUTDOWN_MS).unref()))]);
      clearTimeout(timer);
      trace.disable();
      context.disable();
    },
  };
  current = tracing;
  return tracing;
}

let current: Tracing | undefined;

/** Shuts down the tracing `startTracing` registered, if any (before a `process.exit`: what is queued is exported). */
export async function stopTracing(): Promise<void> {
  await current?.shutdown();
}

/** An exporter that counts the spans it settled (exported, or failed and counted). */
function counted(inner: SpanExporter) {
  const state = { settled: 0 };
  const exporter: SpanExporter = {
    export(spans, done) {
      inner.export(spans, (result) => {
        state.settled += spans.length;
        if (result.code !== 0) traceCounts.exportFailed += spans.length;
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    ...(inner.forceFlush ? { forceFlush: () => inner.forceFlush!() } : {}),
  };
  return { exporter, state };
}

/**
 * Drops a span (and counts it) when `limit` spans are already ended and not yet settled by the
 * exporter: queued in the batch or in an export to a collector that does not answer.
 */
function bounded(inner: SpanProcessor, exporter: ReturnType<typeof counted>, limit: number): SpanProcessor {
  let ended = 0;
  return {
    onStart: (span: Span, parent: Context) => inner.onStart(span, parent),
    onEnd(span: ReadableSpan) {
      if ((span.spanContext().traceFlags & 1) === 0) return; // not sampled: never exported
      if (ended - exporter.state.settled >= limit) {
        traceCounts.dropped++;
        return;
      }
      ended++;
      inner.onEnd(span);
    },
    forceFlush: () => inner.forceFlush(),
    shutdown: () => inner.shutdown(),
  };
}
