/**
 * Brings a projection up to the log's head before it is read (`list` on an engine or a log at rest):
 * what was committed before the question is in the answer, whether or not a worker's projector runs
 * beside it. Two projectors of one name never fold an event twice (projector.ts), so this is safe
 * next to a following one; at the head it costs one `head()`.
 */
import type { EventLog } from '../events/event-log.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { Projector } from './projector.ts';

const projectors = new WeakMap<Db, Projector>();

/** Folds what the log holds past the projection's checkpoint; returns the checkpoint reached. */
export async function catchUpProjection(db: Db, log: EventLog): Promise<number> {
  let projector = projectors.get(db);
  if (!projector) projectors.set(db, (projector = new Projector(db)));
  let at = projector.checkpoint();
  if ((await log.head()) <= at) return at;
  for await (const page of log.readPages({ after: at })) at = projector.apply(page).position;
  return at;
}
