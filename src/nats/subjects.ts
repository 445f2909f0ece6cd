/**
 * Every NATS subject and stream name sessiond uses, spelled once (the table: docs/nats.md#subjects).
 * Event types hold one dot, so live subjects have five tokens and wildcards pick a session, a type or
 * a family.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { catalog, isEventType, type EventType } from '../events/catalog.ts';

export const STREAM_NAME = 'SESSIOND_EVENTS';
/** Subject tokens without wildcards or whitespace (an inbox prefix, a reply subject). */
export const SUBJECT_TOKENS = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/;
export const EVENTS_PREFIX = 'sessiond.events';
export const LIVE_PREFIX = 'sessiond.live';
export const COMMAND_PREFIX = 'sessiond.cmd';
export const TENANT_PREFIX = 'sessiond.t';
/** A tenant's name: a subject token and a user name, so letters, digits, _ and - only. */
export const TENANT_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** `tenant` checked as a tenant's name (a subject token). */
export function validateTenant(tenant: unknown): string {
  if (typeof tenant !== 'string' || !TENANT_NAME.test(tenant))
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid tenant ${JSON.stringify(tenant)}: 1-64 letters, digits, _ or - (it becomes a NATS subject token).`,
    );
  return tenant;
}
/** The queue group every worker's command service joins: one reply per request. */
export const COMMAND_QUEUE = 'sessiond-workers';

/** Event families (`step`, `tool`, ...): a live filter may name one as `<family>.*`. */
const families = new Set(Object.keys(catalog).map((t) => t.split('.')[0]!));

/**
 * Checks a live-subject type filter: an event type (`step.started`), a family (`tool.*`) or every
 * type (undefined). Returns the subject tokens it stands for.
 */
export function liveTypeFilter(type: string | undefined): string {
  if (type === undefined || type === '>' || type === '*.*') return '>';
  if (isEventType(type)) return type;
  const [family, rest, ...more] = type.split('.');
  if (rest === '*' && more.length === 0 && families.has(family!)) return type;
  throw new SessiondError(
    ErrorCode.InvalidOption,
    `Invalid live event type filter ${JSON.stringify(type)}: use an event type (e.g. step.started), a family with a wildcard (e.g. tool.*), or leave it out for every type. Families: ${[...families].join(', ')}.`,
    { details: { type } },
  );
}

export const subjects = {
  /** Wildcard bound to the events stream. */
  allEvents: `${EVENTS_PREFIX}.>`,
  events: (sessionId: string) => `${EVENTS_PREFIX}.${validateId(sessionId, 'session id')}`,
  sessionOfEventsSubject: (subject: string) => subject.slice(EVENTS_PREFIX.length + 1),
  live: (sessionId: string, type: EventType) => `${LIVE_PREFIX}.${validateId(sessionId, 'session id')}.${type}`,
  liveFilter: (filter: { sessionId?: string; type?: string } = {}) =>
    `${LIVE_PREFIX}.${filter.sessionId !== undefined ? validateId(filter.sessionId, 'session id') : '*'}.${liveTypeFilter(filter.type)}`,
  /** `{ sessionId, type }` of a live subject, undefined when it is not one. */
  parseLive: (subject: string): { sessionId: string; type: string } | undefined => {
    const tokens = subject.split('.');
    if (tokens.length !== 5 || `${tokens[0]}.${tokens[1]}` !== LIVE_PREFIX) return undefined;
    return { sessionId: tokens[2]!, type: `${tokens[3]}.${tokens[4]}` };
  },
  allLive: `${LIVE_PREFIX}.>`,
  command: (verb: CommandVerb) => `${COMMAND_PREFIX}.${verb}`,
  /** What a command service subscribes to (in `COMMAND_QUEUE`). */
  allCommands: `${COMMAND_PREFIX}.*`,
  /** The verb of a command subject (any last token; the service refuses unknown verbs). */
  verbOfCommandSubject: (subject: string) => subject.slice(subject.lastIndexOf('.') + 1),
  /** A command sent as one tenant: the worker takes the owner from the subject, which nats.conf lets only that tenant's user publish. */
  tenantCommand: (tenant: string, verb: CommandVerb) => `${TENANT_PREFIX}.${validateTenant(tenant)}.cmd.${verb}`,
  /** What a command service subscribes to for every tenant (in `COMMAND_QUEUE`). */
  allTenantCommands: `${TENANT_PREFIX}.*.cmd.*`,
  /** The tenant a command subject was sent as (undefined: `sessiond.cmd.<verb>`, a trusted user). */
  tenantOfCommandSubject: (subject: string): string | undefined => {
    const tokens = subject.split('.');
    return tokens.length === 5 && `${tokens[0]}.${tokens[1]}` === TENANT_PREFIX && tokens[3] === 'cmd' ? tokens[2] : undefined;
  },
  /** A tenant's copy of a live subject (`sessiond.t.<tenant>.live.<session>.<type>`): the worker publishes each event of a session the tenant owns there too. */
  tenantLive: (tenant: string, sessionId: string, type: EventType) =>
    `${TENANT_PREFIX}.${validateTenant(tenant)}.live.${validateId(sessionId, 'session id')}.${type}`,
  tenantLiveFilter: (tenant: string, filter: { sessionId?: string; type?: string } = {}) =>
    `${TENANT_PREFIX}.${validateTenant(tenant)}.live.${filter.sessionId !== undefined ? validateId(filter.sessionId, 'session id') : '*'}.${liveTypeFilter(filter.type)}`,
  /** What a worker publishes tenants' live copies on (nats.conf's worker user). */
  allTenantLive: `${TENANT_PREFIX}.*.live.>`,
  /** The inbox prefix of a tenant's user (`_INBOX_t.<tenant>`): one `_INBOX_t.>` lets the commands user answer every tenant. */
  tenantInbox: (tenant: string) => `_INBOX_t.${validateTenant(tenant)}`,
} as const;

export const commandVerbs = ['admit', 'wake', 'cancel', 'status', 'drop', 'resolve', 'tag', 'list', 'fork', 'events', 'budget', 'upload', 'blob'] as const;
export type CommandVerb = (typeof commandVerbs)[number];
export function isCommandVerb(value: string): value is CommandVerb {
  return (commandVerbs as readonly string[]).includes(value);
}
