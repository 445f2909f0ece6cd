import type { RecordedError } from '../events/catalog.ts';

/** Turns anything thrown into the recorded error shape; unclassified errors are `{ type: 'unknown' }`. */
export function recordedError(err: unknown, type = 'unknown'): RecordedError {
  if (err instanceof Error) return { type, message: err.message, name: err.name };
  return { type: 'unknown', message: String(err) };
}
