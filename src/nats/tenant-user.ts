/**
 * A tenant's NATS user as a nats.conf block (`sessiond setup --tenant NAME`): commands as its tenant
 * only, its own replies and, with the read scope, its sessions' live events; no JetStream (the stream
 * holds every tenant's sessions). Scopes narrow its commands (docs/nats.md#tenants).
 */
import { randomBytes } from 'node:crypto';
import { SCOPES, type Scope } from '../gateway/scopes.ts';
import { commandVerbs, subjects, validateTenant, type CommandVerb } from './subjects.ts';

/** The scope each command needs, as the gateway's routes do (docs/gateway.md). */
export const VERB_SCOPES: Readonly<Record<CommandVerb, Scope>> = {
  status: 'read',
  list: 'read',
  events: 'read',
  /** a tenant sees its sessions' budgets; the command service refuses a tenant's change */
  budget: 'read',
  admit: 'prompt',
  wake: 'prompt',
  resolve: 'approve',
  cancel: 'manage',
  drop: 'manage',
  tag: 'manage',
  fork: 'manage',
  /** blobs: uploaded to be sent in a prompt, read from a session the tenant reads */
  upload: 'prompt',
  blob: 'read',
};

/** The user name of a tenant's NATS user (unless `setup --tenant-user` names another). */
export const tenantUser = (tenant: string): string => `tenant-${validateTenant(tenant)}`;

const USER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** A NATS user name as `setup --tenant-user` takes it: 1-64 letters, digits, _ or -. */
export function validateUserName(user: unknown): string {
  if (typeof user !== 'string' || !USER_NAME.test(user)) throw new Error(`Invalid user name ${JSON.stringify(user)}: 1-64 letters, digits, _ or -.`);
  return user;
}

/** What a tenant's user may publish and subscribe to. */
export function tenantPermissions(tenant: string, scopes: ReadonlySet<Scope> = new Set(SCOPES)): { publish: string[]; subscribe: string[] } {
  const t = validateTenant(tenant);
  const every = commandVerbs.every((verb) => scopes.has(VERB_SCOPES[verb]));
  const publish = every
    ? [`sessiond.t.${t}.cmd.>`]
    : commandVerbs.filter((verb) => scopes.has(VERB_SCOPES[verb])).map((verb) => subjects.tenantCommand(t, verb));
  // its sessions' live events (a copy the workers publish for it) are reads
  const subscribe = [`${subjects.tenantInbox(tenant)}.>`, ...(scopes.has('read') ? [`sessiond.t.${t}.live.>`] : [])];
  return { publish, subscribe };
}

/** A long random password (48 hex digits). */
export const newPassword = (): string => randomBytes(24).toString('hex');

/** The nats.conf user block of the tenant (for `accounts.SESSIOND.users`), with how to connect. */
export function tenantUserBlock(tenant: string, password: string, scopes?: ReadonlySet<Scope>, user = tenantUser(tenant)): string {
  const p = tenantPermissions(tenant, scopes);
  validateUserName(user);
  const list = (xs: string[]) => xs.map((x) => JSON.stringify(x)).join(', ');
  return [
    `# tenant ${tenant}: its own sessions only, through commands and its live subjects (no JetStream)${scopes ? `; scopes ${[...scopes].join(', ')}` : ''}.`,
    '# Add it to accounts.SESSIOND.users in nats.conf, then reload the server (nats-server --signal reload).',
    `{ user: ${JSON.stringify(user)}, password: ${JSON.stringify(password)},`,
    '  permissions: {',
    `    publish: { allow: [${list(p.publish)}] }`,
    `    subscribe: { allow: [${list(p.subscribe)}] }`,
    '  } }',
    `# connect: SessiondClient.connect({ tenant: ${JSON.stringify(tenant)}, connection: { servers, user: ${JSON.stringify(user)}, pass } })`,
    '',
  ].join('\n');
}
