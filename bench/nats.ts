/**
 * The benchmarks' nats-server: the repo's nats.conf plus one unrestricted user, BENCH_USER, for the
 * raw-substrate measurements (their own BENCH_RAW stream, deleting streams between sections).
 * sessiond itself is measured as the worker user, with the permissions it ships with.
 */
import { startNatsServer, type NatsServer } from '../src/testing/nats-server.ts';

export const BENCH_USER = { user: 'bench', pass: 'bench-only-secret' } as const;

export function startBenchNatsServer(): Promise<NatsServer> {
  return startNatsServer({ extraUsers: [BENCH_USER] });
}
