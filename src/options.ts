/**
 * One way to check a component's options: each component keeps its `DEFAULT_*` values and parses its
 * options once, in its constructor, with these checks; a misspelt key is refused instead of being
 * silently ignored. Errors are `invalid_option` and name the component, the option, what was given
 * and what is accepted.
 */
import { ErrorCode, SessiondError } from './errors.ts';

/** Refuses keys of `input` that are not in `known` (a likely typo). */
export function checkKeys(component: string, input: object, known: readonly string[]): void {
  for (const key of Object.keys(input)) {
    if (!known.includes(key)) {
      throw new SessiondError(ErrorCode.InvalidOption, `Unknown ${component} option "${key}": the options are ${known.join(', ')}.`, {
        details: { option: key },
      });
    }
  }
}

/** A whole number option of at least `min` (`fallback` when absent). */
export function wholeNumber(component: string, key: string, value: unknown, fallback: number, min = 1, unit = ''): number {
  return value === undefined ? fallback : checkWhole(component, key, value, min, unit, ` (default ${fallback})`);
}

/** A whole number option of at least `min` that has no default: absent means none (undefined). */
export function optionalWholeNumber(component: string, key: string, value: unknown, min = 1, unit = ''): number | undefined {
  return value === undefined ? undefined : checkWhole(component, key, value, min, unit, ', or leave it out for none');
}

function checkWhole(component: string, key: string, value: unknown, min: number, unit: string, otherwise: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid ${component} option ${key}=${JSON.stringify(value)}: use a whole number${unit ? ` of ${unit}` : ''} >= ${min}${otherwise}.`,
      { details: { option: key } },
    );
  }
  return value;
}
