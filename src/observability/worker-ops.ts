/**
 * A worker's metrics and health on 127.0.0.1:PORT (`sessiond start --metrics PORT`). The metrics
 * count what the engine writes (an append observer on its log) and its notices; the gauges and the
 * readiness read the engine, the worker's projector and the log when asked.
 */
import { systemClock, type Clock, type TimerHandle } from '../clock.ts';
import type { EventLog } from '../events/event-log.ts';
import type { Worker } from '../execution/worker.ts';
import { TimeoutError, messageOf } from '../errors.ts';
import type { WorkerMetrics } from './metrics.ts';
import { startOpsServer, type OpsServer } from './http.ts';
import type { Db } from '../storage/sqlite/database.ts';

/** What the ops server reads of the engine (the Engine of src/engine.ts is one). */
export interface OpsEngine {
  readonly db: Db;
  readonly log: EventLog;
  activeTurns(): number;
}

/** The projector may trail the log by this much and the worker still counts as ready. */
export const READY_MAX_LAG = 1_000;
const LOG_ANSWER_MS = 2_000;

export async function serveOps(port: number, parts: { engine: OpsEngine; worker: Worker; metrics: WorkerMetrics; clock?: Clock }): Promise<OpsServer> {
  const { engine, worker, metrics } = parts;
  const clock = parts.clock ?? systemClock;
  const db = engine.db;
  const pending = db.prepare('SELECT COUNT(*) FROM session_input WHERE promoted_seq IS NULL AND dropped_seq IS NULL').pluck();
  const quarantined = db.prepare('SELECT COUNT(*) FROM quarantined_message').pluck();
  const lag = async () => (worker.projector ? Math.max(0, (await engine.log.head()) - worker.projector.checkpoint()) : 0);
  metrics.watch({
    liveSessions: () => engine.activeTurns(),
    pendingInputs: () => pending.get() as number,
    projectorLag: lag,
    quarantined: () => quarantined.get() as number,
  });
  const readiness = async (): Promise<string[]> => {
    let timer: TimerHandle | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(() => reject(new TimeoutError(`no answer within ${LOG_ANSWER_MS} ms`)), LOG_ANSWER_MS);
    });
    try {
      const behind = await Promise.race([lag(), late]);
      return behind > READY_MAX_LAG ? [`the projection is ${behind} log positions behind the log (ready at ${READY_MAX_LAG} or fewer)`] : [];
    } catch (err) {
      return [`the event log ${engine.log.name} does not answer: ${messageOf(err)}`];
    } finally {
      clock.clearTimeout(timer);
    }
  };
  return startOpsServer({ port, registry: metrics.registry, readiness });
}
