/**
 * The check that every user input's turn ran once to success, following continuations through
 * recoveries: the execution that promoted the input settled `succeeded`, or it was recovered and the
 * chain of continuations it started (each recovered execution's continuation input, promoted by the
 * next execution) ends in one that did. Shared by the multi-node and cluster suites.
 */
import * as assert from 'uvu/assert';
import { continuationIdFor } from '../../src/recovery/sweeper.ts';
import type { LogAnalysis } from '../nats/cluster.ts';

/** Continuations followed at most from one user input before the chain counts as runaway. */
export const MAX_CONTINUATION_HOPS = 10;

export function assertContinuationChainsSucceed(a: Pick<LogAnalysis, 'executions' | 'promoted'>, userInputs: string[]): void {
  const promoter = (inputId: string) => a.executions.get(a.promoted.get(inputId)![0]!.payload.executionId)!;
  for (const id of userInputs) {
    let x = promoter(id);
    for (let hops = 0; x.settled.length === 0; hops++) {
      assert.ok(hops < MAX_CONTINUATION_HOPS, `input ${id}: continuation chain too long`);
      x = promoter(continuationIdFor(x.id));
    }
    assert.is(x.settled[0]!.payload.outcome, 'succeeded', `input ${id}'s turn (or its continuation) succeeded`);
  }
}
