/**
 * Who did it: the actor a decision, a delivery, a cancel or a drop records in its event (the
 * gateway's token name or the JWT's subject; what a trusted NATS client or the CLI says).
 */
import { InvalidInputError } from '../errors.ts';

export const MAX_ACTOR_CHARS = 200;

/** Who does something (given to `cancel`, `dropPending`, `approve`, `deny`, `resolve`). */
export interface ActorOptions {
  /** Recorded in the event as `actor` (1 to 200 characters). */
  actor?: string;
}

/** `{ actor }` when one is given (checked), else `{}`: spread into a command. */
export function actorOf(actor: unknown): { actor?: string } {
  if (actor === undefined) return {};
  if (typeof actor !== 'string' || actor.length === 0 || actor.length > MAX_ACTOR_CHARS || /[\u0000-\u001f\u007f]/.test(actor))
    throw new InvalidInputError(
      `Invalid actor ${JSON.stringify(actor)?.slice(0, 60)}: say who does it in 1 to ${MAX_ACTOR_CHARS} printable characters (a user or service name).`,
    );
  return { actor };
}
