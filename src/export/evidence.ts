/**
 * An export is evidence, not authority: before a replay, each session's decisions are checked
 * (audit/decisions.ts, approvals never acted on included; a gated call started without approval)
 * in one read of the file. A session with
 * an issue is replayed up to the event before it: a forged or unacted approval comes over as a call
 * still waiting for a decision, which no worker runs until someone approves it where it runs.
 */
import { decisionIssues, type DecisionIssue } from '../audit/decisions.ts';
import { auditSession } from '../audit/audit-log.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { CorruptExportError } from '../errors.ts';
import { readExport } from './export-file.ts';
import { urlGuard, type UrlGuard, type UrlOptions } from '../input/url-guard.ts';
import { messageOf } from '../errors.ts';

/** A session a replay keeps only up to `seq - 1`, and why. */
export interface Withheld extends Omit<DecisionIssue, 'rule'> {
  sessionId: string;
  rule: DecisionIssue['rule'] | 'prompt_url_refused' | (typeof STARTS)[number];
}

/** The audit's rules on calls that wait for a person, which the decision events alone decide. */
const STARTS = ['unapproved_call_started', 'approved_call_started_twice'] as const;

const DECISION_EVENTS = new Set(['wait.started', 'wait.resolved', 'tool.called', 'tool.started']);

/** The first issue of each session whose decisions do not hold, by session id. */
export async function withheldSessions(file: string, urls: UrlOptions = {}): Promise<Map<string, Withheld>> {
  const guard = urlGuard(urls);
  // only what the rules read is kept: decision events, and the first event naming an actor
  const bySession = new Map<string, SessionEvent[]>();
  const actors = new Set<string>();
  // a damaged frame ends what is checked here; the replay itself stops at it and says so
  await readExport(file, {
    onEvents: (events) => {
      for (const e of events) {
        const named = (e.payload as { actor?: unknown }).actor !== undefined && !actors.has(e.sessionId);
        const fetches = e.type === 'input.admitted' && typeof e.payload.prompt !== 'string' && e.payload.prompt.some((p) => 'url' in p);
        if (!DECISION_EVENTS.has(e.type) && !named && !fetches) continue;
        if (named) actors.add(e.sessionId);
        let list = bySession.get(e.sessionId);
        if (!list) bySession.set(e.sessionId, (list = []));
        list.push(e);
      }
    },
  }).catch((err: unknown) => {
    if (!(err instanceof CorruptExportError)) throw err;
  });
  const out = new Map<string, Withheld>();
  for (const [sessionId, events] of bySession) {
    events.sort((a, b) => a.seq - b.seq);
    const started = auditSession(events)
      .filter((v) => (STARTS as readonly string[]).includes(v.rule))
      .map((v) => ({ rule: v.rule as (typeof STARTS)[number], seq: Math.max(...v.seqs), seqs: v.seqs, message: v.message.replace(/^session \S+: /, '') }));
    const url = await refusedUrl(guard, events);
    const issues = [...decisionIssues(events, { acted: true }), ...started, ...(url ? [url] : [])];
    const earliest = issues.reduce<(typeof issues)[number] | undefined>((a, b) => (a === undefined || b.seq < a.seq ? b : a), undefined);
    if (earliest) out.set(sessionId, { sessionId, ...earliest });
  }
  return out;
}

/** The first admission whose prompt names a URL an admission here would refuse. */
async function refusedUrl(guard: UrlGuard, events: readonly SessionEvent[]): Promise<Omit<Withheld, 'sessionId'> | undefined> {
  for (const e of events) {
    if (e.type !== 'input.admitted') continue;
    try {
      await guard.check(e.payload.prompt);
    } catch (err) {
      const why = messageOf(err).replace(/^Invalid input: /, '');
      return { rule: 'prompt_url_refused', seq: e.seq, seqs: [e.seq], message: `input ${e.payload.inputId} at seq ${e.seq}: ${why}` };
    }
  }
  return undefined;
}
