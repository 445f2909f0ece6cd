/**
 * What one session may hold waiting (`maxPromptBytes`, `maxPendingInputs`, `maxPendingBytes`; for
 * parts stored as blobs `maxBlobBytes` each and `maxPendingBlobBytes` in all) and
 * what a worker holds for its loaded sessions (`maxHeldBytes`) and of blobs at once (`maxBlobMemoryBytes`); past a limit an admission is refused
 * (`limit_exceeded`), nothing admitted is dropped. `MAX_PROMOTIONS_PER_APPEND` keeps a claim's
 * append small. Defaults and why: docs/architecture.md#inputs ("Limits").
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { checkKeys, wholeNumber } from '../options.ts';
import type { PendingLimits } from '../machines/commands.ts';

export interface SessionLimits extends PendingLimits {
  maxPromptBytes: number;
  maxHeldBytes: number;
  /** The bytes of one image or file part stored as a blob beside the log (src/input/blob-parts.ts). */
  maxBlobBytes: number;
  /** The bytes of the blob parts of one session's pending prompts together (counted as `maxPendingBytes` counts their events). */
  maxPendingBlobBytes: number;
  /** The blob bytes this worker holds in memory at once, read whole for model calls or being stored (src/blobs/blob-memory.ts). */
  maxBlobMemoryBytes: number;
}

export const DEFAULT_MAX_PROMPT_BYTES = 256 * 1024;
export const DEFAULT_MAX_PENDING_INPUTS = 1_000;
export const DEFAULT_MAX_PENDING_BYTES = 8 * 1024 * 1024;
export const DEFAULT_MAX_HELD_BYTES = 256 * 1024 * 1024;
/** 64 MiB: the blob store's own default (src/blobs/blob-store.ts `DEFAULT_MAX_BLOB_BYTES`). */
export const DEFAULT_MAX_BLOB_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_PENDING_BLOB_BYTES = 256 * 1024 * 1024;
export const DEFAULT_MAX_BLOB_MEMORY_BYTES = 256 * 1024 * 1024;
/** Inputs one append promotes at most (a claim's turn, or a step's steering inputs). */
export const MAX_PROMOTIONS_PER_APPEND = 100;

export const DEFAULT_LIMITS: SessionLimits = {
  maxPromptBytes: DEFAULT_MAX_PROMPT_BYTES,
  maxPendingInputs: DEFAULT_MAX_PENDING_INPUTS,
  maxPendingBytes: DEFAULT_MAX_PENDING_BYTES,
  maxHeldBytes: DEFAULT_MAX_HELD_BYTES,
  maxBlobBytes: DEFAULT_MAX_BLOB_BYTES,
  maxPendingBlobBytes: DEFAULT_MAX_PENDING_BLOB_BYTES,
  maxBlobMemoryBytes: DEFAULT_MAX_BLOB_MEMORY_BYTES,
};

export const LIMIT_OPTIONS = Object.keys(DEFAULT_LIMITS) as (keyof SessionLimits)[];

/** The limits with `given` over the defaults; a misspelt or bad value is an `invalid_option`. */
export function parseLimits(component: string, given: Partial<SessionLimits> = {}): SessionLimits {
  checkKeys(`${component} limits`, given, LIMIT_OPTIONS);
  const out = {} as SessionLimits;
  for (const key of LIMIT_OPTIONS) out[key] = wholeNumber(`${component} limits`, key, given[key], DEFAULT_LIMITS[key], 1, key.endsWith('Bytes') ? 'bytes' : '');
  if (out.maxPromptBytes > out.maxPendingBytes) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid ${component} limits: maxPromptBytes (${out.maxPromptBytes}) is over maxPendingBytes (${out.maxPendingBytes}), so a prompt of the largest size could never be admitted. Raise maxPendingBytes or lower maxPromptBytes.`,
    );
  }
  if (out.maxBlobBytes > out.maxPendingBlobBytes) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid ${component} limits: maxBlobBytes (${out.maxBlobBytes}) is over maxPendingBlobBytes (${out.maxPendingBlobBytes}), so a part of the largest size could never be admitted. Raise maxPendingBlobBytes or lower maxBlobBytes.`,
    );
  }
  if (out.maxBlobBytes > out.maxBlobMemoryBytes) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid ${component} limits: maxBlobBytes (${out.maxBlobBytes}) is over maxBlobMemoryBytes (${out.maxBlobMemoryBytes}), so a part of the largest size could never be read for a model. Raise maxBlobMemoryBytes or lower maxBlobBytes.`,
    );
  }
  return out;
}
