#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ (JavaScript, declarations, source maps) with
// tsconfig.build.json, copies the files src/ reads at run time that are not TypeScript
// (src/inspector/client.js and conversation-view.js, the page's scripts), and checks that every `exports` target and the bin of package.json is
// there. npm runs it as `prepare` (on `npm ci`/`npm install` in a clone, and before `npm pack` and
// `npm publish`).
//
// It cannot leave a half-built dist/: it builds into dist.building/ and swaps that in only once
// whole. Types are not checked here (tsc --noCheck: about 3 times faster, and a type error cannot
// stop an install midway); `npm run typecheck` checks them, and `npm publish` runs it first
// (prepublishOnly).
//
//   node scripts/build.mjs                 build, or exit 1 saying why not
//   node scripts/build.mjs --if-possible   as `prepare`: without TypeScript installed (npm ci --omit=dev)
//                                          print why there is no dist/ and exit 0
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'dist');
const BUILDING = join(ROOT, 'dist.building');
/** What src/ reads at run time relative to its own module that tsc does not emit. */
const ASSETS = ['inspector/client.js', 'inspector/conversation-view.js'];

const ifPossible = process.argv.includes('--if-possible');
const started = Date.now();

function fail(message) {
  rmSync(BUILDING, { recursive: true, force: true });
  process.stderr.write(`build: ${message}\n`);
  process.exit(1);
}

let tsc;
try {
  tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  const why = 'TypeScript is not installed (a dev dependency: npm ci without --omit=dev)';
  if (ifPossible) {
    process.stderr.write(`build: skipped, ${why}; dist/ is not built\n`);
    process.exit(0);
  }
  fail(`${why}, so src/ cannot be compiled`);
}

rmSync(BUILDING, { recursive: true, force: true });
const compiled = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--noCheck', '--outDir', BUILDING], {
  cwd: ROOT,
  stdio: ['ignore', 2, 2],
});
if (compiled.status !== 0) fail(`tsc -p tsconfig.build.json failed (${compiled.error?.message ?? `exit ${compiled.status ?? compiled.signal}`})`);

for (const asset of ASSETS) {
  const to = join(BUILDING, asset);
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(join(ROOT, 'src', asset), to);
}

// every door and the bin, as package.json names them
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const targets = [...exportTargets(pkg.exports), ...Object.values(pkg.bin ?? {})].filter((t) => /^\.?\/?dist\//.test(t));
const missing = targets.filter((t) => !existsSync(join(BUILDING, t.replace(/^\.?\/?dist\//, ''))));
if (missing.length > 0) fail(`package.json names ${missing.join(', ')}, which the build did not produce`);
for (const bin of Object.values(pkg.bin ?? {})) chmodSync(join(BUILDING, bin.replace(/^\.?\/?dist\//, '')), 0o755);

rmSync(OUT, { recursive: true, force: true });
renameSync(BUILDING, OUT);
process.stderr.write(`build: dist/ built from src/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

/** The file paths of an `exports` field (conditions nested at any depth). */
function exportTargets(value) {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}
