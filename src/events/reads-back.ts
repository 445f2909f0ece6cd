/**
 * Whether an appended payload reads back from storage as it is; logs hand their own commits to
 * subscribers undecoded only when it does. Why: docs/architecture.md#design-notes-storage.
 */
/** An unpaired UTF-16 surrogate: stored as UTF-8, it reads back as U+FFFD. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Would `value` read back from the file as it is: plain data (null, booleans, numbers other than -0,
 * well-formed strings, arrays and plain objects of those), with no undefined (the codec leaves such
 * keys out), no Date, Map, class instance or null-prototype object. Payloads parsed from JSON
 * always do; a runner's tool input may not.
 */
export function readsBackAsIs(value: unknown): boolean {
  switch (typeof value) {
    case 'boolean':
      return true;
    case 'number':
      return !Object.is(value, -0);
    case 'string':
      return !LONE_SURROGATE.test(value);
    case 'object': {
      if (value === null) return true;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !readsBackAsIs(value[i])) return false;
        return true;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return false;
      for (const key in value) if (!readsBackAsIs((value as Record<string, unknown>)[key])) return false;
      return true;
    }
    default:
      return false; // undefined, bigint, functions, symbols
  }
}
