// Appends sent to one server only (a probe of what a stream leader answers while it is cut off or
// frozen): a JetStreamEventLog on a connection to that server alone, each append the first event
// of a fresh session (an admission), each answer recorded with the time it came.
//
// The probe's connection is to one server: it stays on it while that server is isolated (the
// server keeps its clients), and while it is SIGSTOPped (its socket stays open: the requests sent
// meanwhile wait in the kernel and are read when it is continued).
import type { SessionEvent } from '../../src/events/envelope.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import type { NatsClusterNode } from '../../src/testing/nats-cluster.ts';
import { WORKER } from '../../src/testing/nats-server.ts';
import type { ClusterWorld } from './helpers.ts';

export interface ProbeAnswer {
  sessionId: string;
  sentAt: number;
  answeredAt: number;
  /** The stored event, when the append was acknowledged. */
  acked?: SessionEvent;
  /** The error's code and message, when it failed. */
  error?: string;
  /** The server the probe's connection was on when the answer came (`host:port`). */
  via: string;
}

export interface Probe {
  readonly answers: ProbeAnswer[];
  /** Resolves with the first acknowledged append. */
  readonly firstAck: Promise<ProbeAnswer>;
  /** One append; resolves with its answer (never rejects). */
  send(): Promise<ProbeAnswer>;
  /** Sends one append every `everyMs` until `stop()`, which resolves once every answer is in. */
  repeat(everyMs: number): { stop(): Promise<void> };
}

/**
 * A probe of `node` (open it before the fault: opening reads the stream's info). `timeoutMs` is one
 * request's timeout, `retryMs` how long the log resends an append without an answer (the same
 * message id each time, so a resend is never stored twice).
 */
export async function probeOf(w: ClusterWorld, node: NatsClusterNode, label: string, options: { timeoutMs: number; retryMs: number }): Promise<Probe> {
  const nc = await connectNats({ servers: node.url, ...WORKER, reconnectWaitMs: 50, name: `cluster-test-probe-${label}` });
  const log = await JetStreamEventLog.open({ connection: nc, ensureStream: false, publishTimeoutMs: options.timeoutMs, publishRetryMs: options.retryMs });
  w.closers.push(async () => {
    await log.close();
    await nc.close();
  });
  const answers: ProbeAnswer[] = [];
  let acked: (a: ProbeAnswer) => void = () => undefined;
  const firstAck = new Promise<ProbeAnswer>((r) => {
    acked = r;
  });
  let n = 0;
  const send = async (): Promise<ProbeAnswer> => {
    const i = n++;
    const sessionId = `ses_probe_${label}_${i}`;
    const sentAt = Date.now();
    const answer: ProbeAnswer = { sessionId, sentAt, answeredAt: 0, via: '' };
    try {
      const [stored] = await log.append(sessionId, 0, [
        {
          id: `evt_probe_${label}_${i}`,
          type: 'input.admitted',
          time: sentAt,
          payload: { inputId: `inp_probe_${label}_${i}`, prompt: `probe ${i} of ${node.name}`, delivery: 'queue', wake: true, source: 'user' },
        },
      ]);
      answer.acked = stored;
      acked(answer);
    } catch (err) {
      const e = err as { code?: string; message?: string };
      answer.error = `${e.code ?? 'error'}: ${e.message ?? String(err)}`.slice(0, 200);
    }
    answer.answeredAt = Date.now();
    answer.via = nc.getServer();
    answers.push(answer);
    return answer;
  };
  const repeat = (everyMs: number) => {
    const inFlight: Promise<ProbeAnswer>[] = [];
    let on = true;
    const loop = (async () => {
      while (on) {
        inFlight.push(send());
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
    return {
      stop: async () => {
        on = false;
        await loop;
        await Promise.all(inFlight);
      },
    };
  };
  return { answers, firstAck, send, repeat };
}

/** The answers in a few words: how many acknowledged, and the distinct errors with their counts. */
export function describeAnswers(answers: ProbeAnswer[]): string {
  const errors = new Map<string, number>();
  for (const a of answers)
    if (a.error) {
      const k = a.error.replace(/\d+ ms/g, 'N ms').slice(0, 120);
      errors.set(k, (errors.get(k) ?? 0) + 1);
    }
  const via = [...new Set(answers.map((a) => a.via))];
  return (
    `${answers.length} sent, ${answers.filter((a) => a.acked).length} acknowledged (via ${via.join(', ')})` +
    (errors.size ? `; failed: ${[...errors].map(([k, v]) => `${v} x ${k}`).join('; ')}` : '')
  );
}

/** Acknowledged probe appends missing from the final log, or stored elsewhere than acknowledged. */
export function lostProbes(answers: ProbeAnswer[], events: SessionEvent[]): string[] {
  const at = new Map(events.map((e) => [e.id, e]));
  return answers
    .filter((a) => a.acked)
    .filter((a) => {
      const e = at.get(a.acked!.id);
      return !e || e.seq !== a.acked!.seq || e.position !== a.acked!.position;
    })
    .map((a) => `${a.sessionId} acked at ${a.acked!.position}`);
}
