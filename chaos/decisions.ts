/** How the fault suite's driver plays the person who approves or denies: open approvals, and decisions, on a backend. */
import type { Wait } from '../src/machines/session-context.ts';
import type { SessiondClient } from '../src/client/client.ts';
import type { Backend } from './backend.ts';

/** The call ids of the open approvals among a session's waits. */
export const openApprovalsOf = (waits: readonly Wait[]): string[] => waits.filter((w) => w.kind === 'approval' && w.outcome === null).map((w) => w.name);

/** Decisions through a NATS client (the `resolve` command), as a service with the client user would send them. */
export function clientDecisions(client: SessiondClient): Pick<Backend, 'openApprovals' | 'decide'> {
  return {
    openApprovals: async (session) => openApprovalsOf((await client.status(session).catch(() => ({ waits: [] }))).waits),
    decide: async (session, callId, approve) => {
      await (approve ? client.approve(session, callId, { reason: 'chaos' }) : client.deny(session, callId, { reason: 'chaos' }));
    },
  };
}
