/**
 * Imports a module named on the command line (`--runner FILE`, `--tools FILE`): JavaScript as it is;
 * TypeScript as it is when the process can load it, else through the user's own tsx (`tsImport`),
 * else an error saying to compile it or install tsx
 * (docs/operating.md#from-an-installed-package-or-from-a-clone).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts', '.tsx']);

/**
 * The file of tsx's programmatic ESM API (`tsx/esm/api`, its `import` condition), resolved from `dirs`
 * in turn; undefined when none of them sees tsx. (`require.resolve('tsx/esm/api')` would give its
 * CommonJS build, which does not load from an ES module.)
 */
export function findTsx(dirs: readonly string[]): string | undefined {
  for (const dir of dirs) {
    let manifest: string;
    try {
      manifest = createRequire(join(dir, 'noop.js')).resolve('tsx/package.json');
    } catch {
      continue; /* not from here */
    }
    try {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: Record<string, unknown> };
      const entry = pkg.exports?.['./esm/api'] as { import?: string | { default?: string } } | undefined;
      const file = typeof entry?.import === 'string' ? entry.import : entry?.import?.default;
      if (typeof file === 'string') return join(dirname(manifest), file);
    } catch {
      /* an unreadable manifest: look further */
    }
  }
  return undefined;
}

type TsImport = (specifier: string, parent: string) => Promise<Record<string, unknown>>;

/**
 * The module at `path` (relative to the working directory). `what` names it in errors ("runner
 * module", "tools module"); every failure is an `invalid_option` SessiondError saying what to do.
 * `hint` is added to every error message; `tsxFrom` overrides where tsx is looked for (tests).
 */
export async function importUserModule(
  path: string,
  what: string,
  options: { hint?: string; tsxFrom?: readonly string[] } = {},
): Promise<Record<string, unknown>> {
  const fail = (message: string, cause?: unknown) =>
    new SessiondError(ErrorCode.InvalidOption, options.hint ? `${message} ${options.hint}` : message, cause === undefined ? {} : { cause });
  const file = resolve(path);
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (err) {
    if (!(TYPESCRIPT.has(extname(file)) && (err as { code?: unknown } | null)?.code === 'ERR_UNKNOWN_FILE_EXTENSION')) {
      throw fail(`Cannot load ${what} ${path}: ${messageOf(err)}.`, err);
    }
  }
  // a TypeScript file this process cannot load by itself: through the user's tsx, if there is one
  const tsx = findTsx(options.tsxFrom ?? [dirname(file), process.cwd()]);
  if (tsx === undefined) {
    throw fail(
      `Cannot load ${what} ${path}: it is TypeScript, and this Node (${process.version}) runs sessiond's compiled JavaScript without a TypeScript loader. ` +
        'Compile it to JavaScript and pass the .js file, or install tsx in your project (npm install --save-dev tsx) and sessiond loads it through tsx.',
    );
  }
  let tsImport: TsImport;
  try {
    const api = (await import(pathToFileURL(tsx).href)) as { tsImport?: TsImport; default?: { tsImport?: TsImport } };
    const fn = api.tsImport ?? api.default?.tsImport;
    if (typeof fn !== 'function') throw new Error(`${tsx} has no tsImport (tsx 4.8 or later has it)`);
    tsImport = fn;
  } catch (err) {
    throw fail(
      `Cannot load ${what} ${path}: it is TypeScript, and the tsx found at ${tsx} did not load (${messageOf(err)}). Compile it to JavaScript, or install tsx 4.8 or later.`,
      err,
    );
  }
  try {
    return await tsImport(url, import.meta.url);
  } catch (err) {
    throw fail(`Cannot load ${what} ${path} (through tsx at ${tsx}): ${messageOf(err)}.`, err);
  }
}
