/** Where two plain-data values first differ: key order and keys holding undefined aside (JSON's view). */
export interface Difference {
  /** e.g. `context.pending[0].prompt`; empty for the values themselves. */
  path: string;
  left: unknown;
  right: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const definedKeys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);

export function firstDifference(left: unknown, right: unknown, path = ''): Difference | undefined {
  if (left === right) return undefined;
  if (!isObject(left) || !isObject(right) || Array.isArray(left) !== Array.isArray(right)) {
    return Number.isNaN(left) && Number.isNaN(right) ? undefined : { path, left, right };
  }
  if (Array.isArray(left) && Array.isArray(right)) {
    for (let i = 0; i < Math.max(left.length, right.length); i++) {
      const d = firstDifference(left[i], right[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  const keys = [...new Set([...definedKeys(left), ...definedKeys(right)])];
  for (const k of keys) {
    const d = firstDifference(left[k], right[k], path ? `${path}.${k}` : k);
    if (d) return d;
  }
  return undefined;
}
