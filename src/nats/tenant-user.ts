/**
 * A tenant's NATS user, as a nats.conf block (`sessiond setup --tenant NAME` prints it): it may send
 * commands as its tenant only (`sessiond.t.<tenant>.cmd.>`; the worker takes the owner from the
 * subject, tenant-target.ts) and read its own replies (`_INBOX_t.<tenant>.>`). No live subjects and
 * no JetStream: those carry every tenant's sessions.
 */
import { randomBytes } from 'node:crypto';
import { subjects, validateTenant } from './subjects.ts';

/** The user name of a tenant's NATS user. */
export const tenantUser = (tenant: string): string => `tenant-${validateTenant(tenant)}`;

/** What a tenant's user may publish and subscribe to. */
export function tenantPermissions(tenant: string): { publish: string[]; subscribe: string[] } {
  return { publish: [`sessiond.t.${validateTenant(tenant)}.cmd.>`], subscribe: [`${subjects.tenantInbox(tenant)}.>`] };
}

/** A long random password (48 hex digits). */
export const newPassword = (): string => randomBytes(24).toString('hex');

/** The nats.conf user block of the tenant (for `accounts.SESSIOND.users`), with how to connect. */
export function tenantUserBlock(tenant: string, password: string): string {
  const p = tenantPermissions(tenant);
  const list = (xs: string[]) => xs.map((x) => JSON.stringify(x)).join(', ');
  return [
    `# tenant ${tenant}: its own sessions only, through commands (no live subjects, no JetStream).`,
    '# Add it to accounts.SESSIOND.users in nats.conf, then reload the server (nats-server --signal reload).',
    `{ user: ${JSON.stringify(tenantUser(tenant))}, password: ${JSON.stringify(password)},`,
    '  permissions: {',
    `    publish: { allow: [${list(p.publish)}] }`,
    `    subscribe: { allow: [${list(p.subscribe)}] }`,
    '  } }',
    `# connect: SessiondClient.connect({ tenant: ${JSON.stringify(tenant)}, connection: { servers, user: ${JSON.stringify(tenantUser(tenant))}, pass } })`,
    '',
  ].join('\n');
}
