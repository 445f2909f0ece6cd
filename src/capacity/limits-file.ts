/**
 * The limits file: model calls in flight by model, by provider (its base URL) and by tenant, one JSON
 * file the same on every worker. `"*"` is a limit per name, not a total; `--max-model-calls N` is
 * `{ "models": { "*": N } }` (docs/operating.md#limits-on-model-calls).
 */
import { readFileSync } from 'node:fs';
import { InvalidInputError } from '../errors.ts';

/** The parts of a limits file: name (or `*`) -> the most calls in flight at once. */
export const LIMIT_PARTS = ['models', 'providers', 'tenants'] as const;
export type LimitPart = (typeof LIMIT_PARTS)[number];

export interface CallLimits {
  models?: Record<string, number>;
  providers?: Record<string, number>;
  tenants?: Record<string, number>;
}

/** Which part of the limits a scope prefix belongs to. */
export const SCOPE_PREFIX: Record<LimitPart, string> = { models: 'model', providers: 'provider', tenants: 'tenant' };

/** The wildcard entry: each name with no entry of its own. */
export const EACH = '*';

const EXAMPLE = '{"models": {"gpt-4o": 4, "*": 8}, "providers": {"https://api.openai.com/v1": 16}, "tenants": {"acme": 2, "*": 4}}';

function refuse(source: string, what: string): never {
  throw new InvalidInputError(`${source}: ${what}. A limits file looks like ${EXAMPLE} (every part optional).`);
}

/** Validates a parsed limits file; `source` names it in errors (a file name, or a flag). */
export function parseCallLimits(json: unknown, source: string): CallLimits {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) refuse(source, 'the limits must be a JSON object');
  const out: CallLimits = {};
  for (const [key, value] of Object.entries(json)) {
    if (!(LIMIT_PARTS as readonly string[]).includes(key))
      refuse(source, `unknown key ${JSON.stringify(key)}: the keys are ${LIMIT_PARTS.map((p) => JSON.stringify(p)).join(', ')}`);
    const part = key as LimitPart;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) refuse(source, `"${part}" must be an object of name -> limit, e.g. {"*": 4}`);
    const entries: Record<string, number> = {};
    for (const [name, limit] of Object.entries(value as Record<string, unknown>)) {
      if (name === '') refuse(source, `"${part}" has an empty name: use "*" for each ${SCOPE_PREFIX[part]} with no entry of its own`);
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1)
        refuse(source, `"${part}"."${name}" is ${JSON.stringify(limit)}: a limit is a whole number of calls in flight, 1 or more`);
      entries[name] = limit;
    }
    out[part] = entries;
  }
  return out;
}

/** Reads and validates a limits file; a file that is missing or not JSON is refused, saying so. */
export function loadCallLimits(file: string): CallLimits {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InvalidInputError(`${file}: cannot read the limits file (${(err as Error).message}). Give the path of a JSON limits file.`, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    refuse(file, `not JSON (${(err as Error).message})`);
  }
  return parseCallLimits(json, file);
}

/** `--max-model-calls N`: the same limit for each model. */
export function maxModelCalls(n: number): CallLimits {
  return parseCallLimits({ models: { [EACH]: n } }, '--max-model-calls');
}

/** Both limits at once: each entry the stricter of the two (an entry in one only is kept). */
export function mergeCallLimits(a: CallLimits, b: CallLimits): CallLimits {
  const out: CallLimits = {};
  for (const part of LIMIT_PARTS) {
    const x = a[part];
    const y = b[part];
    if (!x && !y) continue;
    const merged: Record<string, number> = { ...x };
    for (const [name, limit] of Object.entries(y ?? {})) merged[name] = Math.min(merged[name] ?? limit, limit);
    out[part] = merged;
  }
  return out;
}

/** No limit at all: every call is free. */
export function noLimits(limits: CallLimits): boolean {
  return LIMIT_PARTS.every((p) => Object.keys(limits[p] ?? {}).length === 0);
}

/** One call's names. `tenant` null: a session with no owner. */
export interface CallNames {
  provider: string;
  model: string;
  tenant: string | null;
}

/** The scope of one name in one part: `model:gpt-4o`, `provider:https://…`, `tenant:acme`. */
export function scopeName(part: LimitPart, name: string): string {
  return `${SCOPE_PREFIX[part]}:${name}`;
}

const nameOf = (part: LimitPart, call: CallNames): string | null => (part === 'models' ? call.model : part === 'providers' ? call.provider : call.tenant);

/** The limit of one name in one part: its own entry, else `*`, else none. */
export function limitOf(limits: CallLimits, part: LimitPart, name: string): number | undefined {
  const entries = limits[part];
  if (!entries) return undefined;
  return Object.hasOwn(entries, name) ? entries[name] : Object.hasOwn(entries, EACH) ? entries[EACH] : undefined;
}

/**
 * The limits a call draws from, one per part that has a limit for it. A session with no tenant
 * (null) draws from no tenant limit, not even `*`.
 */
export function scopesOf(limits: CallLimits, call: CallNames): { scope: string; limit: number }[] {
  const out: { scope: string; limit: number }[] = [];
  for (const part of LIMIT_PARTS) {
    const name = nameOf(part, call);
    if (name === null) continue;
    const limit = limitOf(limits, part, name);
    if (limit !== undefined) out.push({ scope: scopeName(part, name), limit });
  }
  return out;
}

/** The limit of a scope (`model:gpt-4o`), or undefined when none applies. */
export function limitOfScope(limits: CallLimits, scope: string): number | undefined {
  const colon = scope.indexOf(':');
  const prefix = scope.slice(0, colon);
  const part = LIMIT_PARTS.find((p) => SCOPE_PREFIX[p] === prefix);
  return part ? limitOf(limits, part, scope.slice(colon + 1)) : undefined;
}

/** The limits in plain words: `model * 2, provider https://api.openai.com/v1 16, tenant acme 2`. */
export function describeCallLimits(limits: CallLimits): string {
  const parts = LIMIT_PARTS.flatMap((part) =>
    Object.entries(limits[part] ?? {}).map(([name, limit]) => `${SCOPE_PREFIX[part]} ${name === EACH ? 'each' : name} ${limit}`),
  );
  return parts.length > 0 ? parts.join(', ') : 'none';
}
