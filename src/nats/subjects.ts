/**
 * Every NATS subject and stream name sessiond uses, spelled once.
 *
 * | subject                                   | what                                             |
 * | ----------------------------------------- | ------------------------------------------------ |
 * | `sessiond.events.<session>`               | durable log, one subject per session (stream SESSIOND_EVENTS) |
 * | `sessiond.live.<session>.<event type>`    | every event as it happens, incl. live-only text deltas (core NATS) |
 * | `sessiond.cmd.<verb>`                     | request/reply commands: admit, wake, cancel, status |
 *
 * Event types contain one dot (`step.started`), so live subjects have five tokens and services can
 * subscribe to one session (`sessiond.live.ses_1.>`), one type everywhere
 * (`sessiond.live.*.step.started`), one family (`sessiond.live.*.tool.*`) or all (`sessiond.live.>`).
 */
import { validateId } from '../ids.ts';
import type { EventType } from '../events/catalog.ts';

export const STREAM_NAME = 'SESSIOND_EVENTS';
export const EVENTS_PREFIX = 'sessiond.events';
export const LIVE_PREFIX = 'sessiond.live';
export const COMMAND_PREFIX = 'sessiond.cmd';

export const subjects = {
  /** Wildcard bound to the events stream. */
  allEvents: `${EVENTS_PREFIX}.>`,
  events: (sessionId: string) => `${EVENTS_PREFIX}.${validateId(sessionId, 'session id')}`,
  sessionOfEventsSubject: (subject: string) => subject.slice(EVENTS_PREFIX.length + 1),
  live: (sessionId: string, type: EventType) => `${LIVE_PREFIX}.${validateId(sessionId, 'session id')}.${type}`,
  liveFilter: (filter: { sessionId?: string; type?: string } = {}) =>
    `${LIVE_PREFIX}.${filter.sessionId ? validateId(filter.sessionId, 'session id') : '*'}.${filter.type ?? '>'}`,
  allLive: `${LIVE_PREFIX}.>`,
  command: (verb: CommandVerb) => `${COMMAND_PREFIX}.${verb}`,
} as const;

export const commandVerbs = ['admit', 'wake', 'cancel', 'status'] as const;
export type CommandVerb = (typeof commandVerbs)[number];
