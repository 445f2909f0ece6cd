/**
 * The fake OpenAI server on the command line, for trying a runner by hand: prints its base URL, logs
 * each request on stderr, stops on SIGTERM or SIGINT; unscripted, it answers with `echoReply`.
 *
 *   node --import tsx src/testing/fake-openai-cli.ts [--port 8089] [--host 127.0.0.1] [--api-key KEY] [--model fake-model]
 */
import { parseArgs } from 'node:util';
import { startFakeOpenAI } from './fake-openai.ts';

const USAGE = 'usage: fake-openai-cli [--port 8089] [--host 127.0.0.1] [--api-key KEY] [--model fake-model]';

async function main(): Promise<void> {
  let values: { port?: string; host?: string; 'api-key'?: string; model?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        'api-key': { type: 'string' },
        model: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const port = Number(values.port ?? 8089);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be an integer from 0 to 65535, got ${JSON.stringify(values.port)}\n${USAGE}\n`);
    process.exit(2);
  }

  const server = await startFakeOpenAI({
    port,
    host: values.host,
    apiKey: values['api-key'],
    model: values.model,
    onRequest: (r) => {
      const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
      const chat = r.chat
        ? ` (${plural(r.chat.messages.length, 'message')}${r.chat.tools?.length ? `, ${plural(r.chat.tools.length, 'tool')}` : ''}${r.chat.stream ? ', stream' : ''})`
        : '';
      process.stderr.write(`${new Date().toISOString()} #${r.index} ${r.method} ${r.path}${chat}\n`);
    },
  });
  process.stdout.write(`fake OpenAI-compatible server on ${server.url}\n`);

  const stop = (signal: NodeJS.Signals) => {
    process.stderr.write(`${signal}: stopping\n`);
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`failed to stop cleanly: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
