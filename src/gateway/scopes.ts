/**
 * What a token may do. Each route and NATS command needs one scope:
 * `read` (status, list, events, conversation), `prompt` (admit, wake, cancel its own turns),
 * `approve` (approve, deny, resolve waits), `manage` (tags, fork, drop pending, cancel any turn),
 * `admin` (budgets, delete, retention).
 */
import { ErrorCode, HttpError } from '../errors.ts';

export const SCOPES = ['read', 'prompt', 'approve', 'manage', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** A token file entry without `scopes`: what tokens could do before scopes, minus approve and admin. */
export const DEFAULT_SCOPES: readonly Scope[] = ['read', 'prompt', 'manage'];

const isScope = (s: unknown): s is Scope => typeof s === 'string' && (SCOPES as readonly string[]).includes(s);

/** A `scopes` list from a token file or a JWT claim (an array, or a space-separated string). */
export function parseScopes(raw: unknown): ReadonlySet<Scope> {
  const list = typeof raw === 'string' ? raw.split(/\s+/).filter(Boolean) : raw;
  if (!Array.isArray(list) || list.length === 0) throw new Error(`expected a non-empty list of ${SCOPES.join(', ')}`);
  const unknown = list.find((s) => !isScope(s));
  if (unknown !== undefined) throw new Error(`unknown scope ${JSON.stringify(unknown)} (known: ${SCOPES.join(', ')})`);
  return new Set(list as Scope[]);
}

/** Refuses (403 `permission_denied`, naming the scope and the token) a request the grant's scopes do not cover. */
export function checkScope(grant: { name: string; scopes: ReadonlySet<Scope> }, scope: Scope, what: string): void {
  if (grant.scopes.has(scope)) return;
  throw new HttpError(
    403,
    ErrorCode.PermissionDenied,
    `Token ${grant.name} lacks scope ${scope}, which ${what} needs (it has ${[...grant.scopes].join(', ')}): give the token "${scope}" in its scopes, or use one that has it.`,
  );
}
