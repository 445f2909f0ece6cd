/** Parsers for command-line option values; each names the option and says what is expected. */
import { InvalidArgumentError } from 'commander';

export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a whole number > 0 (got "${value}").`);
    return n;
  };
}

export function nonNegativeInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a whole number >= 0 (got "${value}").`);
    return n;
  };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as whole units, one or more (`500ms`, `90s`, `10m`, `1h30m`, `2d`), in milliseconds (> 0). */
export function parseDuration(value: string): number | undefined {
  const parts = value.trim().match(/^(?:\d+(?:ms|s|m|h|d))+$/) ? [...value.trim().matchAll(/(\d+)(ms|s|m|h|d)/g)] : [];
  const ms = parts.reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_MS[unit!]!, 0);
  return parts.length > 0 && ms > 0 && Number.isSafeInteger(ms) ? ms : undefined;
}

export function duration(name: string) {
  return (value: string): number => {
    const ms = parseDuration(value);
    if (ms === undefined) throw new InvalidArgumentError(`${name} must be a duration such as 500ms, 90s, 10m, 1h30m or 2d (got "${value}").`);
    return ms;
  };
}

/** A moment as an ISO 8601 date and time with its zone (`2026-12-24T09:00:00Z`, `...+01:00`), in ms since the epoch. */
export function instant(name: string) {
  return (value: string): number => {
    const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(value) ? Date.parse(value) : Number.NaN;
    if (!Number.isFinite(ms) || ms < 0)
      throw new InvalidArgumentError(`${name} must be a date and time with its zone, such as 2026-12-24T09:00:00Z or 2026-12-24T10:00+01:00 (got "${value}").`);
    return ms;
  };
}

/** A TCP port: a whole number from 1 to 65535. */
export function port(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new InvalidArgumentError(`${name} must be a port from 1 to 65535 (got "${value}").`);
    return n;
  };
}

export function oneOf<T extends string>(name: string, values: readonly T[]) {
  return (value: string): T => {
    if (!values.includes(value as T)) throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')} (got "${value}").`);
    return value as T;
  };
}

/** `--synchronous NORMAL|FULL` (any case). */
export function synchronousOption(value: string): 'NORMAL' | 'FULL' {
  const v = value.toUpperCase();
  if (v !== 'NORMAL' && v !== 'FULL') throw new InvalidArgumentError(`--synchronous must be NORMAL or FULL (got "${value}").`);
  return v;
}
