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
