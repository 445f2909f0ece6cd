/**
 * A list filter from a URL's query (the inspector's session list, the gateway's `GET /v1/sessions`):
 * `?state=S&waiting=1|0&tag=k=v&prefix=P&called_by=S&updated=MS&limit=N&after=CURSOR` (`tag` repeatable). Checked with
 * list's own words; a bad one is an `HttpError` 400 `invalid_query`.
 */
import { HttpError, messageOf } from '../errors.ts';
import { checkListFilter, type ListFilter } from './list.ts';
import { parseTagArgument } from '../events/tags.ts';

/** `?state=S&waiting=1|0&tag=k=v&prefix=P&called_by=S&updated=MS&limit=N&after=CURSOR` as a list filter (its checks are list's own). */
export function listFilterOf(q: URLSearchParams): ListFilter {
  const filter: Record<string, unknown> = {};
  const state = q.get('state');
  if (state) filter['state'] = state;
  const waiting = q.get('waiting');
  if (waiting === '1' || waiting === '0') filter['waiting'] = waiting === '1';
  const tags = q.getAll('tag').filter((t) => t.length > 0);
  if (tags.length > 0) {
    try {
      filter['tags'] = Object.fromEntries(tags.map((t) => parseTagArgument(t, false)));
    } catch (err) {
      throw new HttpError(400, 'invalid_query', messageOf(err));
    }
  }
  for (const [name, key] of [
    ['updated', 'updatedSince'],
    ['limit', 'limit'],
  ] as const) {
    const raw = q.get(name);
    if (raw) filter[key] = Number(raw);
  }
  const prefix = q.get('prefix');
  if (prefix) filter['idPrefix'] = prefix;
  const calledBy = q.get('called_by');
  if (calledBy) filter['calledBy'] = calledBy;
  const after = q.get('after');
  if (after) filter['after'] = after;
  try {
    checkListFilter(filter as ListFilter); // refused here with list's words, as a 400
    return filter as ListFilter;
  } catch (err) {
    throw new HttpError(400, 'invalid_query', messageOf(err));
  }
}
