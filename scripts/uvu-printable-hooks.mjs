// Module hooks for scripts/uvu-printable.mjs: uvu's runner formats `details` only when it is a string.
const WHERE = /\/node_modules\/uvu\/dist\/index\.m?js$/;
const FROM = "if (details) str += GUTTER + details.split('\\n').join(GUTTER);";
const TO = "if (typeof details === 'string') str += GUTTER + details.split('\\n').join(GUTTER);";

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!WHERE.test(url) || loaded.source === undefined || loaded.source === null) return loaded;
  const source = String(loaded.source);
  if (!source.includes(FROM))
    throw new Error(`scripts/uvu-printable-hooks.mjs: ${url} no longer holds the line it changes (${FROM}); update the hook for this uvu version`);
  return { ...loaded, source: source.replace(FROM, TO) };
}
