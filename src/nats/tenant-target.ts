/**
 * What a command sent as a tenant (`sessiond.t.<tenant>.cmd.<verb>`) may touch: the tenant, taken from
 * the subject only its user may publish, is the owner. Admissions and forks carry it, lists show what
 * it reaches, a session another owner holds answers `not_found`, and quotas count per tenant
 * (docs/nats.md#tenants).
 */
import { ErrorCode, PermissionError, isSessiondError } from '../errors.ts';
import { checkBudgetRequest } from '../sessions/budget.ts';
import { ownerReaches, unreachable } from '../sessions/owner.ts';
import type { Sessions } from '../sessions/sessions.ts';
import type { QuotaGuard } from '../gateway/quota-checks.ts';
import type { QuotaKey, Quotas } from '../gateway/quotas.ts';

/** What the command service drives (its `CommandTarget`). */
type Target = Pick<
  Sessions,
  'admit' | 'wake' | 'cancel' | 'status' | 'dropPending' | 'approve' | 'deny' | 'resolve' | 'tag' | 'list' | 'fork' | 'events' | 'budget'
>;

/** A tenant's quotas on this worker: the checks (shared by every tenant) and the limits. */
export interface TenantQuotas {
  guard: QuotaGuard;
  limits: Quotas;
}

export function tenantTarget(target: Target, tenant: string, quotas?: TenantQuotas): Target {
  const keys: QuotaKey[] = quotas ? [{ id: `tenant:${tenant}`, label: `tenant ${tenant}`, limits: quotas.limits }] : [];
  const guard = quotas?.guard;
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
    admit: (sessionId, request) => {
      const run = () => target.admit(sessionId, { ...request, owner: tenant });
      return guard ? guard.admit(keys, sessionId, request.prompt, run) : run();
    },
    fork: (sourceId, sessionId, options) => {
      const run = () => target.fork(sourceId, sessionId, { ...options, owner: tenant });
      return guard ? guard.fork(keys, sessionId, run) : run();
    },
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
    // a tenant sees its session's budget; only the admin or a trusted caller changes it
    budget: async (sessionId, request) => {
      if (checkBudgetRequest(request) !== undefined)
        throw new PermissionError(
          `A tenant cannot change a budget (tenant ${tenant}, session ${sessionId}): the admin does, with sessiond budget ${sessionId} --tokens N (or on the trusted subject sessiond.cmd.budget).`,
        );
      await reach(sessionId);
      return target.budget(sessionId);
    },
  };
}
