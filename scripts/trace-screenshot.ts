/**
 * Makes docs/images/trace.png: one turn's trace as Jaeger holds it, drawn as a waterfall. The
 * pinned Jaeger build (.tools/bin/jaeger, scripts/tools.mjs) serves no UI (a `go install` embeds
 * a placeholder page, not the UI's assets), so this queries Jaeger's API for the trace and renders it
 * as HTML, captured with the system's Chromium (playwright-core, never a downloaded browser).
 *
 *   npx tsx scripts/trace-screenshot.ts [OUT.png]      (default docs/images/trace.png)
 *
 * The turn: a caller's traceparent with the prompt, the OpenAI-compatible runner against the local
 * fake server (src/testing/fake-openai.ts), a first model call asking for two tools at once, a
 * durable one among them, then the answer; exported over OTLP http/protobuf by the SDK the worker
 * loads when OTEL_* is set, contents captured (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { chromium } from 'playwright-core';
import { openEngine } from '../src/engine.ts';
import { openaiRunner } from '../src/runner/model/openai.ts';
import { defineTool } from '../src/runner/model/tools.ts';
import { startTracing } from '../src/observability/otel-sdk.ts';
import { startFakeOpenAI } from '../src/testing/fake-openai.ts';
import { freePort } from '../src/testing/nats-server.ts';
import { waitFor } from '../src/testing/wait.ts';

const ROOT = resolve(import.meta.dirname, '..');
const OUT = resolve(process.argv[2] ?? join(ROOT, 'docs', 'images', 'trace.png'));
const TRACE = '5a1e55d0c0ffee0000000000000000a1';
const CALLER = `00-${TRACE}-00f067aa0ba902b7-01`;

interface JaegerSpan {
  spanID: string;
  operationName: string;
  startTime: number;
  duration: number;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

async function startJaeger(dir: string) {
  const bin = process.env.SESSIOND_JAEGER ?? join(ROOT, '.tools', 'bin', 'jaeger');
  if (!existsSync(bin)) throw new Error(`Jaeger is not built at ${bin}: run node scripts/tools.mjs`);
  const [otlp, query, grpc] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'jaeger.yaml');
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines: { traces: { receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter] } }
  telemetry: { metrics: { level: none } }
extensions:
  jaeger_query: { storage: { traces: memstore }, http: { endpoint: 127.0.0.1:${query} }, grpc: { endpoint: 127.0.0.1:${grpc} } }
  jaeger_storage: { backends: { memstore: { memory: { max_traces: 100 } } } }
receivers: { otlp: { protocols: { http: { endpoint: 127.0.0.1:${otlp} } } } }
processors: { batch: { timeout: 100ms } }
exporters: { jaeger_storage_exporter: { trace_storage: memstore } }
`,
  );
  const child = spawn(bin, ['--config', config], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${query}`;
  await waitFor(async () => (await fetch(`${url}/api/services`).catch(() => undefined))?.ok === true, { what: "Jaeger's query API", timeoutMs: 20_000 });
  return { child, otlp: `http://127.0.0.1:${otlp}`, query: url };
}

/** Runs the turn with spans exported to `otlp`. */
async function turn(dir: string, otlp: string): Promise<void> {
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_SERVICE_NAME: 'sessiond',
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
  });
  const tracing = await startTracing(process.env);
  const llm = await startFakeOpenAI({ apiKey: 'k' });
  const engine = await openEngine({
    file: join(dir, 'trace.db'),
    runner: openaiRunner({
      model: 'gpt-4o',
      baseURL: llm.url,
      apiKey: 'k',
      system: 'You are a travel assistant.',
      tools: {
        weather: defineTool({
          description: 'Weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            await new Promise((r) => setTimeout(r, 60));
            return { city, celsius: 14 };
          },
        }),
        send_postcard: defineTool({
          description: 'Sends a postcard',
          durable: true,
          inputSchema: z.object({ to: z.string() }),
          execute: async () => {
            await new Promise((r) => setTimeout(r, 90));
            return 'sent';
          },
        }),
      },
    }),
  });
  try {
    llm.script(
      {
        kind: 'toolCalls',
        delayMs: 30,
        calls: [
          { name: 'weather', arguments: { city: 'Paris' } },
          { name: 'send_postcard', arguments: { to: 'Ada' } },
        ],
      },
      { kind: 'text', delayMs: 20, text: ['It is 14 degrees in Paris; ', 'the postcard to Ada is on its way.'] },
    );
    await engine.admit('ses_paris', { prompt: 'Weather in Paris? And send Ada a postcard.', traceparent: CALLER });
    await engine.awaitIdle('ses_paris');
  } finally {
    await engine.close();
    await llm.close();
    await tracing?.shutdown();
  }
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** The trace as a waterfall: a row a span, indented under its parent, a bar for its time, its main attributes. */
function render(spans: JaegerSpan[]): string {
  const ids = new Set(spans.map((s) => s.spanID));
  const parentOf = (s: JaegerSpan) => s.references.find((r) => r.refType === 'CHILD_OF' && ids.has(r.spanID))?.spanID;
  const children = new Map<string | undefined, JaegerSpan[]>();
  for (const s of spans) children.set(parentOf(s), [...(children.get(parentOf(s)) ?? []), s]);
  const rows: { span: JaegerSpan; depth: number }[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => a.startTime - b.startTime)) {
      rows.push({ span: s, depth });
      walk(s.spanID, depth + 1);
    }
  };
  walk(undefined, 0);
  const t0 = Math.min(...spans.map((s) => s.startTime));
  const total = Math.max(...spans.map((s) => s.startTime + s.duration)) - t0;
  const tag = (s: JaegerSpan, k: string) => s.tags.find((t) => t.key === k)?.value;
  const shown = [
    'gen_ai.operation.name',
    'gen_ai.request.model',
    'gen_ai.usage.input_tokens',
    'gen_ai.usage.output_tokens',
    'gen_ai.response.finish_reasons',
    'gen_ai.tool.name',
    'gen_ai.tool.call.arguments',
    'sessiond.tool.durable',
    'sessiond.seq',
    'sessiond.outcome',
  ];
  const colour = (name: string) =>
    name.startsWith('invoke_agent') ? '#4c78a8' : name.startsWith('chat') ? '#f58518' : name.startsWith('execute_tool') ? '#54a24b' : '#9d755d';
  const body = rows
    .map(({ span, depth }) => {
      const left = ((span.startTime - t0) / total) * 100;
      const width = Math.max((span.duration / total) * 100, 0.3);
      const attrs = shown
        .filter((k) => tag(span, k) !== undefined)
        .map((k) => `<span class="k">${esc(k.replace(/^gen_ai\.|^sessiond\./, ''))}</span>=${esc(String(tag(span, k)))}`)
        .join(' ');
      return `<div class="row"><div class="name" style="padding-left:${depth * 16 + 6}px">${esc(span.operationName)} <span class="ms">${(span.duration / 1000).toFixed(1)} ms</span><div class="attrs">${attrs}</div></div>
<div class="lane"><div class="bar" style="left:${left}%;width:${width}%;background:${colour(span.operationName)}"></div></div></div>`;
    })
    .join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; width: 1260px; }
h1 { font-size: 16px; margin: 0 0 4px; } .sub { color: #666; margin-bottom: 12px; }
.row { display: flex; border-top: 1px solid #eee; min-height: 38px; }
.name { width: 520px; flex: none; padding: 4px 0; font-weight: 600; }
.attrs { font-weight: 400; font-size: 11px; color: #555; overflow-wrap: anywhere; } .k { color: #888; }
.lane { position: relative; flex: 1; } .bar { position: absolute; top: 11px; height: 14px; border-radius: 2px; }
.ms { font-weight: 400; font-size: 12px; color: #666; }
</style></head><body><h1>Trace ${TRACE} (service sessiond, ${spans.length} spans, ${(total / 1000).toFixed(1)} ms)</h1>
<div class="sub">Rendered by scripts/trace-screenshot.ts from Jaeger 1.75.0's query API (/api/traces/${TRACE}); the caller's span is the parent of invoke_agent and is not in the trace (it was the caller's).</div>
${body}</body></html>`;
}

const dir = mkdtempSync(join(tmpdir(), 'sessiond-trace-shot-'));
const jaeger = await startJaeger(dir);
try {
  await turn(dir, jaeger.otlp);
  let spans: JaegerSpan[] = [];
  await waitFor(
    async () => {
      const res = await fetch(`${jaeger.query}/api/traces/${TRACE}`);
      if (!res.ok) return false;
      spans = ((await res.json()) as { data: { spans: JaegerSpan[] }[] }).data[0]?.spans ?? [];
      return spans.some((s) => s.operationName.startsWith('invoke_agent')) && spans.filter((s) => s.operationName.startsWith('chat')).length === 2;
    },
    { what: 'the trace in Jaeger', timeoutMs: 20_000 },
  );
  const html = join(dir, 'trace.html');
  writeFileSync(html, render(spans));
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium' });
  try {
    const page = await browser.newPage({ viewport: { width: 1300, height: 400 }, deviceScaleFactor: 1 });
    await page.goto(`file://${html}`);
    mkdirSync(dirname(OUT), { recursive: true });
    await page.screenshot({ path: OUT, fullPage: true });
  } finally {
    await browser.close();
  }
  process.stdout.write(`${OUT}: ${spans.length} spans of trace ${TRACE}\n`);
} finally {
  jaeger.child.kill();
  rmSync(dir, { recursive: true, force: true });
}
