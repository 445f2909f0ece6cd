/**
 * What every section gets: the sizes for this run (quick or --full), a temp dir, the nats-server,
 * the results, the echo-turn template, and `need(name)` to make sure a baseline section ran first
 * (sections are memoised, so a baseline is measured once per run).
 */
import type { NatsServer } from '../../src/testing/nats-server.ts';
import type { Results } from './report.ts';
import type { Template } from './corpus.ts';

export interface Sizes {
  /** Passes of each short throughput figure; the best is kept (see bestOf in measure.ts). */
  passes: number;
  /** Raw SQLite: rows inserted one transaction each, and rows in one batched transaction. */
  rawTxnRows: number;
  rawBatchRows: number;
  /** msgpackr round trips. */
  msgpackOps: number;
  /** JetStream raw OCC publishes and log appends, per subject/session (64 of them). */
  jsPerSubject: number;
  /** Embedded log appends (3 events each). */
  sqliteAppends: number;
  /** Events folded by the projector. */
  projectorEvents: number;
  /** Rounds of 64 concurrent turns, and single turns timed alone (embedded / NATS). */
  turnRounds: number;
  natsTurnRounds: number;
  latencyTurns: number;
  /** Events replayed from an export file, and from JetStream. */
  exportReplayEvents: number;
  jsReplayEvents: number;
  /** Hydrated session actors held in memory. */
  actors: number;
  /** Events replayed while watching peak memory. */
  memoryReplayEvents: number;
  /** SIGKILL takeover trials. */
  takeoverTrials: number;
}

export const QUICK: Sizes = {
  passes: 3,
  rawTxnRows: 10_000,
  rawBatchRows: 100_000,
  msgpackOps: 50_000,
  jsPerSubject: 100,
  sqliteAppends: 4_000,
  projectorEvents: 50_000,
  turnRounds: 6,
  natsTurnRounds: 3,
  latencyTurns: 60,
  exportReplayEvents: 60_000,
  jsReplayEvents: 30_000,
  actors: 10_000,
  memoryReplayEvents: 100_000,
  takeoverTrials: 3,
};

export const FULL: Sizes = {
  passes: 5,
  rawTxnRows: 50_000,
  rawBatchRows: 500_000,
  msgpackOps: 300_000,
  jsPerSubject: 400,
  sqliteAppends: 20_000,
  projectorEvents: 500_000,
  turnRounds: 30,
  natsTurnRounds: 15,
  latencyTurns: 200,
  exportReplayEvents: 500_000,
  jsReplayEvents: 200_000,
  actors: 10_000,
  memoryReplayEvents: 1_000_000,
  takeoverTrials: 10,
};

export interface Ctx {
  full: boolean;
  sizes: Sizes;
  /** Run-wide temp dir (removed at the end). */
  tmp: string;
  results: Results;
  template: Template;
  /** Started on first use. */
  nats(): Promise<NatsServer>;
  /** Runs the named section first if it has not run yet (for baselines). */
  need(section: string): Promise<void>;
}

export interface Section {
  name: string;
  title: string;
  run(ctx: Ctx): Promise<void>;
}

/** Concurrent sessions in the "64 at once" figures. */
export const CONCURRENCY = 64;
