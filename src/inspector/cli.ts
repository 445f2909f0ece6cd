/**
 * The `--inspect PORT` option of `sessiond start` (the host serves the inspector on 127.0.0.1:PORT).
 */
import { port } from '../cli/options.ts';

export const INSPECT_OPTION = ['--inspect <port>', 'serve the inspector (state chart, timelines, time travel) on http://127.0.0.1:PORT'] as const;

/** Parses `--inspect PORT`: a whole number from 1 to 65535. */
export const inspectPort = port('--inspect');
