/**
 * Operating many sessions:
 *   sessiond ls [--state S] [--waiting | --not-waiting] [--tag k=v]... [--prefix P] [--called-by S] [--updated-since T] [--limit N] [--after CURSOR] [--json]
 *   sessiond tag SESSION k=v [k=]...     set tags (k= removes one)
 * `ls` reads the projection (on --db brought up to the log's head first; on --nats a worker answers
 * from its own), newest first, one page at a time: the next page is `--after` the cursor it prints.
 */
import { isoTime } from '../../clock.ts';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { isIdText, MAX_ID_LENGTH, validateId } from '../../ids.ts';
import { UsageError } from '../../errors.ts';
import type { ListFilter, SessionListItem } from '../../sessions/list.ts';
import { SESSION_STATES } from '../../sessions/list.ts';
import { parseTagArgument } from '../../events/tags.ts';
import type { CliContext } from '../context.ts';
import { instant, oneOf, parseDuration, positiveInt } from '../options.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';

interface LsOptions extends LogOptions {
  state?: ListFilter['state'];
  waiting?: boolean;
  notWaiting?: boolean;
  tag?: [string, string][];
  prefix?: string;
  calledBy?: string;
  updatedSince?: number;
  limit?: number;
  after?: string;
  json?: boolean;
}

/** `--tag k=v`, repeatable: the pairs so far with this one. */
export function collectTag(value: string, previous: [string, string][] = []): [string, string][] {
  try {
    const [key, tagValue] = parseTagArgument(value);
    return [...previous, [key, tagValue as string]];
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** A time with its zone, or a duration back from now (`7d`: seven days ago): `--updated-since`, `--settled-before`. */
export function timeOrAgo(flag: string): (value: string) => number {
  return (value) => {
    const ago = parseDuration(value);
    return ago === undefined ? instant(flag)(value) : Date.now() - ago;
  };
}
const since = timeOrAgo('--updated-since');

function idPrefix(value: string): string {
  if (!isIdText(value))
    throw new InvalidArgumentError(
      `${JSON.stringify(value.slice(0, 80))} cannot start a session id: use 1-${MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @.`,
    );
  return value;
}

function sessionId(value: string): string {
  if (!isIdText(value))
    throw new InvalidArgumentError(
      `${JSON.stringify(value.slice(0, 80))} is not a session id: use 1-${MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @.`,
    );
  return value;
}

const iso = (ms: number) => isoTime(ms).replace(/\.\d{3}Z$/, 'Z');

function describeItem(s: SessionListItem): string {
  const tags = Object.entries(s.tags)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const waits = s.waiting ? ' WAITING' : '';
  const pending = s.pendingInputs > 0 ? `, ${s.pendingInputs} pending` : '';
  const fork = s.forkedFrom ? `, forked from ${s.forkedFrom.sessionId}@${s.forkedFrom.seq}` : '';
  const parent = s.calledBy ? `, called by ${s.calledBy}` : '';
  const children = s.childCount > 0 ? `, ${s.childCount} ${s.childCount === 1 ? 'child' : 'children'}` : '';
  return `${s.sessionId}  ${s.state}${waits}  seq ${s.seq}${pending}  updated ${iso(s.updatedAt)}${fork}${parent}${children}${tags ? `  ${tags}` : ''}`;
}

export function registerSessionsList(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('ls')
      .description('list sessions, newest first, a page at a time (filter by state, waiting, tags, id prefix, caller, time)')
      .option('--state <state>', `only sessions in this state (${SESSION_STATES.join(', ')})`, oneOf('--state', SESSION_STATES))
      .option('--waiting', 'only sessions whose turn waits (an approval, a signal, a timer)')
      .option('--not-waiting', 'only sessions whose turn does not wait')
      .option('--tag <key=value>', 'only sessions with this tag (repeatable: every one must match)', collectTag)
      .option('--prefix <start>', 'only sessions whose id starts with this (cust-42:)', idPrefix)
      .option('--called-by <session>', 'only the children of this session (those its turn last called: ctx.callSession)', sessionId)
      .option('--updated-since <time>', 'only sessions changed since then: a time (2026-12-01T00:00:00Z) or a duration back (7d, 1h)', since)
      .option('--limit <n>', 'sessions per page (default 50, at most 1000)', positiveInt('--limit'))
      .option('--after <cursor>', 'the page after this cursor (printed at the end of the page before)')
      .option('--json', 'print { "sessions": [...], "next": cursor | null }'),
    ctx,
  ).action(async (opts: LsOptions) => {
    if (opts.waiting && opts.notWaiting) throw new UsageError('--waiting and --not-waiting contradict each other: give one of them.');
    const filter: ListFilter = {
      ...(opts.state ? { state: opts.state } : {}),
      ...(opts.waiting ? { waiting: true } : opts.notWaiting ? { waiting: false } : {}),
      ...(opts.tag?.length ? { tags: Object.fromEntries(opts.tag) } : {}),
      ...(opts.prefix === undefined ? {} : { idPrefix: opts.prefix }),
      ...(opts.calledBy === undefined ? {} : { calledBy: opts.calledBy }),
      ...(opts.updatedSince === undefined ? {} : { updatedSince: opts.updatedSince }),
      ...(opts.limit === undefined ? {} : { limit: opts.limit }),
      ...(opts.after === undefined ? {} : { after: opts.after }),
    };
    await withSessions(opts, ctx, 'sessiond-ls', async ({ sessions, describe }) => {
      const page = await sessions.list(filter);
      if (opts.json) {
        ctx.out(JSON.stringify(page));
        return;
      }
      if (page.sessions.length === 0) ctx.out(opts.after ? 'no more sessions match' : `no session in ${describe} matches`);
      for (const s of page.sessions) ctx.out(describeItem(s));
      if (page.next) ctx.out(`more: sessiond ls ... --after ${page.next}`);
    });
  });

  addLogOptions(
    program
      .command('tag')
      .description("set or remove a session's tags (key=value sets, key= removes)")
      .argument('<session>', 'session id')
      .argument('<tags...>', 'key=value (or key= to remove the key)'),
    ctx,
  ).action(async (session: string, pairs: string[], opts: LogOptions) => {
    validateId(session, 'session id');
    const changes = Object.fromEntries(pairs.map((p) => parseTagArgument(p, true)));
    await withSessions(opts, ctx, 'sessiond-tag', async ({ sessions }) => {
      const r = await sessions.tag(session, changes);
      const now = Object.entries(r.tags)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      ctx.out(`${r.changed ? `tagged ${session}${r.seq === undefined ? '' : ` at sequence ${r.seq}`}` : `${session} already had these tags; nothing changed`}`);
      ctx.out(`tags: ${now || 'none'}`);
    });
  });
}
