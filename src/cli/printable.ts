/**
 * Text from a file or a log made safe for a terminal: control characters (ANSI escapes included),
 * bidirectional overrides and lone surrogates shown as escapes, cut to `max` characters.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

export function printable(text: unknown, max = 200): string {
  const s = typeof text === 'string' ? text : String(text);
  const cut = s.length > max ? `${s.slice(0, max)}... (${s.length - max} more characters)` : s;
  return cut.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
