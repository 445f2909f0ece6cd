/**
 * package.json's doors, checked without a build (fast; test/package/pack.test.ts checks the built and
 * packed package): every `exports` target and the bin is a file under dist/ that the build makes from
 * a source file under src/ (`dist/x.js` and `dist/x.d.ts` from `src/x.ts`), each door has its types
 * first and its import, `files` ships what it should, and the dependencies are where a user needs
 * them (tsx a dev dependency, uvu an optional peer).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | Record<string, string>>;
  bin: Record<string, string>;
  files: string[];
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  scripts: Record<string, string>;
};

/** The source file the build compiles to `target` (a path under dist/). */
function sourceOf(target: string): string {
  const m = /^\.\/dist\/(.+)\.(d\.ts|js)$/.exec(target.startsWith('./') ? target : `./${target}`);
  assert.ok(m, `${target} is not a .js or .d.ts file under ./dist/`);
  return join(ROOT, 'src', `${m[1]}.ts`);
}

test('package - the doors are ., ./client, ./testing and ./internal, each { types, import } under dist/ from a file of src/', () => {
  const doors = Object.keys(pkg.exports).filter((k) => k !== './package.json');
  assert.equal(doors, ['.', './client', './testing', './internal']);
  const expected: Record<string, string> = {
    '.': 'src/index.ts',
    './client': 'src/client/index.ts',
    './testing': 'src/testing/index.ts',
    './internal': 'src/internal.ts',
  };
  for (const door of doors) {
    const entry = pkg.exports[door];
    assert.type(entry, 'object', `${door} is not a conditions object`);
    const conditions = entry as Record<string, string>;
    assert.equal(
      Object.keys(conditions),
      ['types', 'import'],
      `${door}: types must come first (TypeScript reads the first condition that matches), then import`,
    );
    assert.match(conditions.types!, /\.d\.ts$/, `${door}: types is not a .d.ts`);
    assert.match(conditions.import!, /\.js$/, `${door}: import is not a .js`);
    assert.is(sourceOf(conditions.types!), sourceOf(conditions.import!), `${door}: types and import come from different sources`);
    assert.is(sourceOf(conditions.import!), join(ROOT, expected[door]!), `${door} is not built from ${expected[door]}`);
    assert.ok(existsSync(sourceOf(conditions.import!)), `${door}: ${expected[door]} does not exist`);
  }
});

test('package - the bin is the compiled CLI, whose source starts with a shebang', () => {
  assert.equal(pkg.bin, { sessiond: 'dist/cli/main.js' });
  const source = sourceOf(pkg.bin.sessiond!);
  assert.ok(readFileSync(source, 'utf8').startsWith('#!/usr/bin/env node\n'), `${source} has no shebang: the installed bin would not run`);
});

test('package - files ships dist, docs, the NATS configs, README.md and LICENSE', () => {
  assert.equal([...pkg.files].sort(), ['LICENSE', 'README.md', 'dist', 'docs', 'nats-cluster.conf', 'nats.conf']);
  for (const file of pkg.files.filter((f) => f !== 'dist')) assert.ok(existsSync(join(ROOT, file)), `files names ${file}, which does not exist`);
  assert.match(readFileSync(join(ROOT, 'LICENSE'), 'utf8'), /^MIT License/);
  assert.ok(readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n').includes('dist/'), 'dist/ is not git-ignored');
});

test('package - tsx is a dev dependency, uvu an optional peer, and prepare builds', () => {
  assert.not.ok('tsx' in pkg.dependencies, 'tsx is a runtime dependency');
  assert.ok('tsx' in pkg.devDependencies, 'tsx is not a dev dependency (the tests and npm start use it)');
  assert.ok(pkg.peerDependencies?.uvu, 'uvu is not a peer dependency (sessiond/testing imports it)');
  assert.is(pkg.peerDependenciesMeta?.uvu?.optional, true, 'the uvu peer is not optional');
  assert.ok('uvu' in pkg.devDependencies, 'uvu is not a dev dependency');
  assert.match(pkg.scripts.prepare ?? '', /scripts\/build\.mjs/);
  assert.match(pkg.scripts.build ?? '', /scripts\/build\.mjs/);
});

test.run();
