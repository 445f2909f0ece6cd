/**
 * What a command sent as a tenant (`sessiond.t.<tenant>.cmd.<verb>`) may touch: the tenant is the
 * owner (sessions/owner.ts), taken from the subject, which nats.conf lets only that tenant's user
 * publish. Admissions and forks carry it (the machine fixes it on a new session, and refuses another
 * owner's inside the append), lists show only what it reaches, and every other command on a session
 * another owner holds answers `not_found`, as a session with no events does.
 */
import { ErrorCode, isSessiondError } from '../errors.ts';
import { ownerReaches, unreachable } from '../sessions/owner.ts';
import type { Sessions } from '../sessions/sessions.ts';

/** What the command service drives (its `CommandTarget`). */
type Target = Pick<Sessions, 'admit' | 'wake' | 'cancel' | 'status' | 'dropPending' | 'approve' | 'deny' | 'resolve' | 'tag' | 'list' | 'fork' | 'events'>;

export function tenantTarget(target: Target, tenant: string): Target {
  /** Refuses a session another owner holds; one with no events goes on (the command answers not_found itself). */
  const reach = async (sessionId: string): Promise<void> => {
    let ownedBy: string | null;
    try {
      ownedBy = (await target.status(sessionId)).ownedBy;
    } catch (err) {
      if (isSessiondError(err, ErrorCode.NotFound)) return;
      throw err;
    }
    if (!ownerReaches(ownedBy, tenant)) throw unreachable(sessionId);
  };
  return {
    admit: (sessionId, request) => target.admit(sessionId, { ...request, owner: tenant }),
    fork: (sourceId, sessionId, options) => target.fork(sourceId, sessionId, { ...options, owner: tenant }),
    list: (filter) => target.list({ ...filter, reachableBy: tenant }),
    async status(sessionId, options) {
      const status = await target.status(sessionId, options);
      if (!ownerReaches(status.ownedBy, tenant)) throw unreachable(sessionId);
      return status;
    },
    wake: (sessionId) => reach(sessionId).then(() => target.wake(sessionId)),
    cancel: (sessionId, reason, executionId) => reach(sessionId).then(() => target.cancel(sessionId, reason, executionId)),
    dropPending: (sessionId, request) => reach(sessionId).then(() => target.dropPending(sessionId, request)),
    approve: (sessionId, callId, options) => reach(sessionId).then(() => target.approve(sessionId, callId, options)),
    deny: (sessionId, callId, options) => reach(sessionId).then(() => target.deny(sessionId, callId, options)),
    resolve: (sessionId, name, options) => reach(sessionId).then(() => target.resolve(sessionId, name, options)),
    tag: (sessionId, tags) => reach(sessionId).then(() => target.tag(sessionId, tags)),
    events: (sessionId, options) => reach(sessionId).then(() => target.events(sessionId, options)),
  };
}
