/**
 * One optimistic publish of the raw JetStream turn: expecting the subject's last stream sequence to
 * be `last`, as sessiond's own append does (src/nats/jetstream-append.ts).
 *
 * A replicated stream can refuse a publish whose expectation is right: nats-server (2.15.2) acks a
 * stored message before it clears the subject from its "expected per subject in process" set
 * (jetstream_cluster.go, applyStreamMsgOp: processJetStreamMsg, then the delete), so the next
 * publish on that subject, sent the moment the ack arrives, can reach the leader's check inside
 * that window and be refused with 10164 (`wrong last sequence`, without the number). It is rare
 * (one in about 100,000 publishes on a loaded 2-core machine) and it is not a conflict: the subject
 * holds exactly what the publisher expects. So, as sessiond's log does, a refusal is checked
 * against the subject's last message (a leader-consistent read): where it is `last`, the same
 * publish is sent again (and counted); anywhere else it is a real mismatch, reported with both
 * sequences.
 */
import { JetStreamApiError } from '@nats-io/jetstream';

/** 10071: wrong last sequence (with the real one); 10164: the same, without it. */
const WRONG_LAST_SEQUENCE = [10071, 10164];
/** A publish refused this many times in a row while the subject is where expected is not the window above. */
const MAX_RESENDS = 10;

export interface OccTarget {
  /** Publishes `data` on `subject` expecting the subject's last stream sequence `last` (0: none); the stored stream sequence. */
  publish(subject: string, data: Uint8Array, last: number): Promise<number>;
  /** The stream sequence of the subject's last message (0: none), read from the stream's leader. */
  lastOf(subject: string): Promise<number>;
}

export interface OccCounts {
  /** Publishes refused while the subject was where they expected, and sent again. */
  resent: number;
}

export async function occPublish(target: OccTarget, subject: string, data: Uint8Array, last: number, counts: OccCounts): Promise<number> {
  for (let resends = 0; ; resends++) {
    try {
      return await target.publish(subject, data, last);
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || !WRONG_LAST_SEQUENCE.includes(err.code)) throw err;
      const actual = await target.lastOf(subject);
      if (actual !== last) {
        throw new Error(
          `raw OCC publish on ${subject} refused (${err.code} ${err.message}): it expected the subject's last stream sequence ${last}, the stream holds ${actual}. Another writer is on the subject, or the harness lost count of its own publishes.`,
          { cause: err },
        );
      }
      if (resends >= MAX_RESENDS) {
        throw new Error(
          `raw OCC publish on ${subject} refused ${resends + 1} times in a row (${err.code} ${err.message}) while the subject's last stream sequence is ${last}, as expected: the server is not letting it through.`,
          { cause: err },
        );
      }
      counts.resent++;
    }
  }
}
