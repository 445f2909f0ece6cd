/**
 * Changing a session's tags (`sessions.tag`): one `session.tagged` event with the changes that
 * change something. Idempotent: tags it already has change nothing (`changed: false`, no event).
 */
import { ErrorCode, SessiondError, isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { MAX_TAGS, validateTags, type TagChanges, type TagResult } from '../events/tags.ts';
import { unknownSession } from './status.ts';

export async function tagSession(handler: CommandHandler, sessionId: string, changes: TagChanges): Promise<TagResult> {
  validateId(sessionId, 'session id');
  const checked = validateTags(changes, 'the tag request', { changes: true });
  if (Object.keys(checked).length === 0) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      'Invalid tags: the tag request names no tag. Give at least one, e.g. { "customer": "acme" } (null removes a tag).',
    );
  }
  try {
    const { events, snapshot } = await handler.execute(sessionId, (now) => ({ type: 'tag', now, tags: checked }));
    return { sessionId, tags: snapshot.context.tags, changed: true, seq: events[0]!.seq };
  } catch (err) {
    if (isRefusal(err, 'no_events')) throw unknownSession(sessionId, 'tag');
    if (isRefusal(err, 'nothing_to_change'))
      return { sessionId, tags: (handler.cached(sessionId) ?? (await handler.load(sessionId))).context.tags, changed: false };
    if (isRefusal(err, 'tag_limit')) {
      throw new SessiondError(ErrorCode.LimitExceeded, err.message.replace(/^tag refused for session \S+ \(tag_limit\): /, ''), {
        cause: err,
        details: { sessionId, maxTags: MAX_TAGS },
      });
    }
    throw err;
  }
}
