/**
 * The inspector as `sessiond start --inspect PORT` uses it: the option's parser, and serving the
 * worker's log on 127.0.0.1:PORT with the URL printed. start.ts adds the option and one call.
 */
import { port } from '../cli/options.ts';
import type { EventLog } from '../events/event-log.ts';
import { messageOf } from '../errors.ts';
import { startInspector, type Inspector } from './server.ts';

export const INSPECT_OPTION = ['--inspect <port>', 'serve the inspector (state chart, timelines, time travel) on http://127.0.0.1:PORT'] as const;

/** Parses `--inspect PORT`: a whole number from 1 to 65535. */
export const inspectPort = port('--inspect');

/** Serves the inspector for `log` when a port is given and prints where; returns it (or undefined). */
export async function serveInspector(log: EventLog, port: number | undefined, out: { out: (line: string) => void; err: (line: string) => void }): Promise<Inspector | undefined> {
  if (port === undefined) return undefined;
  const inspector = await startInspector({ log, port, onError: (err) => out.err(`sessiond: inspector: ${messageOf(err)}`) });
  out.out(`  inspector: ${inspector.url}  (state chart, live sessions, timelines, time travel)`);
  return inspector;
}
