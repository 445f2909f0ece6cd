/**
 * Where the fleet's capacity state lives: one small JSON value shared by every worker of a
 * deployment (a row of the SQLite file, or a key of a JetStream KV bucket). Every change goes
 * through `update`, atomically, so two workers never each apply a counter of their own.
 */
import { CorruptDataError } from '../errors.ts';
import { type CapacityState, emptyCapacityState } from './decide.ts';

export interface CapacityStore {
  /** The state as stored (empty when none). */
  read(): Promise<CapacityState>;
  /** Applies `change` atomically (retrying on a concurrent write) and returns its result. */
  update<T>(change: (state: CapacityState) => { state: CapacityState; result: T }): Promise<T>;
  close(): Promise<void>;
}

export function encodeCapacityState(state: CapacityState): string {
  return JSON.stringify(state);
}

/** The stored text as a state; fields a older writer did not store read as empty. */
export function decodeCapacityState(text: string | undefined | null, where: string): CapacityState {
  if (text === undefined || text === null || text === '') return emptyCapacityState();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CorruptDataError(
      `${where} does not hold sessiond's capacity state (not JSON: ${(err as Error).message}). Delete it: workers write it again at their next heartbeat.`,
      {
        cause: err,
      },
    );
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new CorruptDataError(
      `${where} does not hold sessiond's capacity state (not a JSON object). Delete it: workers write it again at their next heartbeat.`,
    );
  return { ...emptyCapacityState(), ...(json as Partial<CapacityState>) };
}
