/**
 * sessiond as its users get it: `npm pack` the project (which builds dist/ through `prepare`),
 * install the tarball into an empty temporary project, and use it there the way a user would, with
 * plain `node` (no tsx, no TypeScript loader):
 *
 *   (a) `import ... from 'sessiond'` runs an embedded turn (openEngine, echoRunner, a temp SQLite
 *       file: admit, awaitIdle, status settled), and every door (`sessiond`, `sessiond/client`,
 *       `sessiond/testing`, `sessiond/internal`) loads;
 *   (b) `npx sessiond --help` lists the commands;
 *   (c) a TypeScript consumer (module and moduleResolution nodenext, strict) typechecks against the
 *       shipped declarations, importing from `sessiond`, `sessiond/client` and `sessiond/testing`,
 *       and a deliberate type error in a second file is reported, with skipLibCheck false (every
 *       shipped declaration, sessiond's and its dependencies', is checked too);
 *   (c') the same consumer in a second empty project that gets the tarball by a plain
 *       `npm install ./sessiond-*.tgz` (no lock: versions resolved as a user's npm resolves them)
 *       typechecks too, so the types every declaration needs are dependencies (@types/json-schema
 *       for @ai-sdk/provider's), not whatever the project's own lock happens to hold;
 *   (d) `--runner FILE.ts` fails with a message saying to compile it or install tsx when the project
 *       has no tsx, and loads through the project's tsx when it has one; a `.mjs` runner just loads;
 *   (e) the NATS harness of `sessiond/testing` finds nats.conf in the package and nats-server from
 *       SESSIOND_NATS_SERVER, and without one says what to install;
 *   (f) the tarball (npm pack's own list of what it packed, as `npm pack --dry-run --json` gives
 *       it) holds dist/, docs/, README.md, LICENSE, the two NATS configs and package.json, every
 *       `exports` target and the bin, and nothing of src/, test/, bench/, chaos/, scripts/ or examples/;
 *   (g) last, as it deletes packages: `sessiond/client` loads with better-sqlite3 and xstate deleted
 *       from node_modules (and `sessiond` then does not: the deletion is real).
 *
 * The install needs neither the internet nor a compile of better-sqlite3: the temporary project gets
 * a package-lock.json whose entries are the project's own lock entries for sessiond's dependency
 * closure (the versions the project is tested with; each with its integrity, which finds the tarball
 * in the npm cache the project's `npm ci` filled), plus the tarball itself as `sessiond`; then
 * `npm ci --prefer-offline --ignore-scripts` (a cold cache falls back to the registry), and
 * better-sqlite3's compiled binding is copied from the project's node_modules (install scripts are
 * off, so nothing built it). Everything else comes out of the tarball and the registry's tarballs.
 * Only (c') asks the registry what to install (`npm install --prefer-offline --ignore-scripts`: the
 * npm cache answers when it can; nothing is run there, so better-sqlite3 is not built).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NATS_SERVER_BIN } from '../../src/testing/nats-server.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  license: string;
  bin: Record<string, string>;
  engines: Record<string, string>;
  exports: Record<string, string | { types: string; import: string }>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, unknown>;
};

const started = Date.now();
const say = (line: string) => process.stdout.write(`  [pack ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);

const temp = mkdtempSync(join(tmpdir(), 'sessiond-pack-'));
const PACKED = join(temp, 'packed');
const APP = join(temp, 'app');
/** The project of (c'): the tarball installed by plain `npm install`, no lock. */
const FRESH = join(temp, 'fresh');
process.on('exit', () => rmSync(temp, { recursive: true, force: true }));

/**
 * The environment of a child npm or node: without what a parent npm (`npm test`) passes down, which
 * would point the child at the project (npm_config_local_prefix, npm_package_*, ...), and without
 * NODE_OPTIONS (no loader); the user's cache, registry and config stay.
 */
function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const keep = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig']);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) || keep.has(k.toLowerCase())));
  delete env.INIT_CWD;
  delete env.NODE_OPTIONS; // plain node: no --import tsx handed down
  return { ...env, FORCE_COLOR: '0', NO_COLOR: '1', SESSIOND_LOG_FORMAT: 'text', ...extra };
}

/** Runs a command to completion, saying what it runs and how long it took. */
function run(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; what?: string }): SpawnSyncReturns<string> {
  const t = Date.now();
  const r = spawnSync(cmd, args, {
    cwd: options.cwd,
    env: childEnv(options.env),
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  say(`${options.what ?? `${cmd} ${args.join(' ')}`}: exit ${r.status ?? r.signal ?? r.error?.message} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return r;
}
const output = (r: SpawnSyncReturns<string>) => `${r.error ? `${r.error.message}\n` : ''}stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;

/** `sessiond start` from the installed package until it says it is running (then SIGTERM), or until it exits. */
function startWorker(args: string[], options: { timeoutMs?: number } = {}): Promise<{ running: boolean; code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(APP, 'node_modules/.bin/sessiond'), ['start', ...args], { cwd: APP, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let running = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sessiond start ${args.join(' ')} neither ran nor exited within ${options.timeoutMs ?? 30_000} ms; output:\n${out}`));
    }, options.timeoutMs ?? 30_000);
    const seen = (d: Buffer) => {
      out += d;
      if (!running && /is running on/.test(out)) {
        running = true;
        child.kill('SIGTERM');
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ running, code, out });
    });
  });
}

interface PackResult {
  filename: string;
  integrity: string;
  files: { path: string }[];
}
let packed: PackResult;

/** The project's lock entries for `roots` and everything they depend on, as the temp project's lock holds them. */
function lockClosure(roots: Record<string, string>): Record<string, Record<string, unknown>> {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<
      string,
      Record<string, unknown> & { version: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }
    >;
  };
  const entries = lock.packages;
  const registry = (process.env.npm_config_registry ?? 'https://registry.npmjs.org/').replace(/\/?$/, '/');
  /** Where node would find `name` from the package at `from`, in the lock's layout. */
  const locate = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
      const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (entries[key]) return key;
      if (!dir) return undefined;
    }
  };
  const out: Record<string, Record<string, unknown>> = {};
  const todo: [string, string, boolean][] = Object.keys(roots).map((name) => ['', name, false]);
  while (todo.length > 0) {
    const [from, name, optional] = todo.pop()!;
    const key = locate(from, name);
    if (key === undefined) {
      if (optional) continue;
      throw new Error(`package-lock.json has no ${name} for ${from || 'the project'}: run npm install --package-lock-only`);
    }
    if (out[key]) continue;
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = entries[key]!;
    // the tarball's address (this lock omits it): with the integrity, npm takes the tarball from its cache
    entry.resolved ??= `${registry}${name}/-/${name.split('/').pop()}-${entry.version}.tgz`;
    out[key] = entry;
    for (const dep of Object.keys(entry.dependencies ?? {})) todo.push([key, dep, false]);
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) todo.push([key, dep, true]);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

let installed = false;
/** Every test after the first needs its install. */
const needInstall = () => assert.ok(installed, "the tarball was not packed and installed: see the first test's failure");

// (not a test.before hook: uvu drops the error a hook throws, and this one must be seen)
test('package - npm pack, and npm ci of the tarball into an empty project', () => {
  mkdirSync(PACKED);
  mkdirSync(APP);
  say(`temp dir ${temp}`);
  // `npm pack` runs `prepare`: scripts/build.mjs compiles src/ to dist/
  const pack = run('npm', ['pack', '--json', '--pack-destination', PACKED], { cwd: ROOT, what: 'npm pack (prepare: build dist/)', timeoutMs: 180_000 });
  assert.is(pack.status, 0, output(pack));
  const json = pack.stdout.slice(pack.stdout.indexOf('['));
  packed = (JSON.parse(json) as PackResult[])[0]!;
  say(`packed ${packed.filename}: ${packed.files.length} files`);

  const lockOf = (name: string) =>
    (JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }).packages[`node_modules/${name}`]!
      .version;
  // what a consumer adds next to sessiond: uvu (the testing door's optional peer), Node's types
  const extra = { uvu: lockOf('uvu'), '@types/node': lockOf('@types/node') };
  const tarball = `file:../packed/${packed.filename}`;
  const dependencies = { sessiond: tarball, ...extra };
  writeFileSync(join(APP, 'package.json'), `${JSON.stringify({ name: 'sessiond-pack-consumer', private: true, type: 'module', dependencies }, null, 2)}\n`);
  const appLock = {
    name: 'sessiond-pack-consumer',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'sessiond-pack-consumer', dependencies },
      'node_modules/sessiond': {
        version: pkg.version,
        resolved: tarball,
        integrity: packed.integrity,
        license: pkg.license,
        dependencies: pkg.dependencies,
        peerDependencies: pkg.peerDependencies,
        peerDependenciesMeta: pkg.peerDependenciesMeta,
        bin: pkg.bin,
        engines: pkg.engines,
      },
      ...lockClosure({ ...pkg.dependencies, ...extra }),
    },
  };
  writeFileSync(join(APP, 'package-lock.json'), `${JSON.stringify(appLock, null, 2)}\n`);
  const install = run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: APP,
    what: `npm ci of the tarball and ${Object.keys(appLock.packages).length - 2} locked packages`,
    timeoutMs: 180_000,
  });
  assert.is(install.status, 0, output(install));
  // install scripts were off: better-sqlite3's native binding comes from the project's own build
  const binding = 'build/Release/better_sqlite3.node';
  mkdirSync(join(APP, 'node_modules/better-sqlite3', dirname(binding)), { recursive: true });
  copyFileSync(join(ROOT, 'node_modules/better-sqlite3', binding), join(APP, 'node_modules/better-sqlite3', binding));
  say("copied better-sqlite3's compiled binding from the project");
  installed = true;
});

test.after(() => {
  rmSync(temp, { recursive: true, force: true });
  say('temp dir removed');
});

test('package - plain node imports sessiond and runs an embedded turn; every door loads', () => {
  needInstall();
  assert.not.ok(existsSync(join(APP, 'node_modules/tsx')), 'tsx was installed with sessiond: it must be a dev dependency only');
  writeFileSync(
    join(APP, 'embedded.mjs'),
    `
import { openEngine, echoRunner } from 'sessiond';
const engine = await openEngine({ file: process.argv[2], runner: echoRunner() });
const receipt = await engine.admit('ses_pack', { prompt: 'hello from the tarball' });
await engine.awaitIdle('ses_pack');
const status = await engine.status('ses_pack');
await engine.close();
const doors = {};
for (const door of ['sessiond', 'sessiond/client', 'sessiond/testing', 'sessiond/internal']) doors[door] = Object.keys(await import(door)).length;
console.log(JSON.stringify({ inputId: receipt.inputId, state: status.state, seq: status.seq, doors }));
`,
  );
  const r = run(process.execPath, ['embedded.mjs', join(APP, 'embedded.db')], {
    cwd: APP,
    what: 'node embedded.mjs (openEngine + echoRunner, then every door)',
  });
  assert.is(r.status, 0, output(r));
  const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as { inputId: string; state: string; seq: number; doors: Record<string, number> };
  assert.match(result.inputId, /^inp_/);
  assert.is(result.state, 'settled', r.stdout);
  assert.ok(result.seq > 2, `the turn committed only ${result.seq} events`);
  for (const [door, count] of Object.entries(result.doors)) assert.ok(count > 3, `${door} exports ${count} names`);
  say(
    `a turn ran to ${result.state} at seq ${result.seq}; doors: ${Object.entries(result.doors)
      .map(([d, n]) => `${d} ${n}`)
      .join(', ')}`,
  );
});

test('package - npx sessiond --help lists the commands', () => {
  needInstall();
  const r = run('npx', ['--no', '--', 'sessiond', '--help'], { cwd: APP });
  assert.is(r.status, 0, output(r));
  assert.match(r.stdout, /Usage: sessiond/);
  for (const command of ['start', 'prompt', 'status', 'tail', 'check', 'export', 'replay', 'chart', 'setup']) {
    assert.match(r.stdout, new RegExp(`^\\s+${command}\\b`, 'm'), `sessiond --help does not list ${command}:\n${r.stdout}`);
  }
});

/** consumer.ts: a strict TypeScript consumer of `sessiond`, `sessiond/client` and `sessiond/testing`. */
const CONSUMER_TS = `
import { openEngine, echoRunner, isSessiondError, ErrorCode, type Engine, type SessionStatus, type Runner } from 'sessiond';
import { SessiondClient, isCommandError, CommandFailureCode, subjects, type SessiondClientOptions, type LiveMessage, type StatusReply } from 'sessiond/client';
import { startNatsServer, startFakeOpenAI, waitFor, eventLogContract, ev, draft, WORKER, type NatsServer, type LogFixture } from 'sessiond/testing';

export async function embedded(file: string): Promise<SessionStatus['state']> {
  const engine: Engine = await openEngine({ file, runner: echoRunner() });
  try {
    await engine.admit('ses_ts', { prompt: 'typed' });
    await engine.awaitIdle('ses_ts');
    return (await engine.status('ses_ts')).state;
  } finally {
    await engine.close();
  }
}

export const runner: Runner = async (ctx) => { void ctx; };

export async function status(server: NatsServer): Promise<StatusReply | undefined> {
  const options: SessiondClientOptions = { connection: { servers: server.url, user: 'client', pass: 'client-dev-secret' } };
  const client = await SessiondClient.connect(options);
  try {
    return await client.status('ses_ts');
  } catch (err) {
    if (isCommandError(err, CommandFailureCode.NoWorker) || isSessiondError(err, ErrorCode.InvalidId)) return undefined;
    throw err;
  } finally {
    await client.close();
  }
}

export const liveSubject: string = subjects.live('ses_ts', 'text.delta');
export const sessionOf = (message: LiveMessage): string => message.sessionId;
export const helpers = { startNatsServer, startFakeOpenAI, waitFor, eventLogContract, worker: WORKER.user, first: draft(ev('input.admitted', { prompt: 'p' })) };
export type Fixture = LogFixture;
`;

/**
 * Writes consumer.ts, wrong.ts (one deliberate type error) and a strict nodenext tsconfig.json with
 * skipLibCheck false into `dir`, runs the project's tsc there, and asserts that the only error is
 * wrong.ts's: none in the consumer, none in sessiond's declarations, none in any other package's.
 */
function typecheckConsumer(dir: string, what: string): void {
  writeFileSync(join(dir, 'consumer.ts'), CONSUMER_TS);
  writeFileSync(
    join(dir, 'wrong.ts'),
    `
import { openEngine } from 'sessiond';
// deliberate: a function is not a number
export const wrong: number = openEngine;
`,
  );
  // skipLibCheck off: the shipped .d.ts files are checked too, and the ones they import, not only what the consumer sees of them
  writeFileSync(
    join(dir, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['consumer.ts', 'wrong.ts'],
      },
      null,
      2,
    )}\n`,
  );
  const r = run(process.execPath, [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: dir,
    what: `tsc (the project's TypeScript, skipLibCheck false) on consumer.ts and wrong.ts, ${what}`,
    timeoutMs: 240_000,
  });
  const errors = r.stdout.split('\n').filter((l) => /^\S.*\(\d+,\d+\): error TS\d+/.test(l));
  const inFile = (prefix: string) => errors.filter((l) => l.startsWith(prefix));
  assert.equal(inFile('consumer.ts'), [], `the consumer does not typecheck against the shipped types (${what}):\n${r.stdout}`);
  assert.equal(inFile('node_modules/sessiond/'), [], `the shipped declarations have errors (${what}):\n${r.stdout}`);
  // another package's declarations that need types nothing installed (@ai-sdk/provider imports json-schema): a dependency sessiond must bring
  const others = errors.filter((l) => !l.startsWith('consumer.ts') && !l.startsWith('wrong.ts') && !l.startsWith('node_modules/sessiond/'));
  assert.equal(others, [], `declarations of sessiond's dependencies have errors (${what}): a type package missing from sessiond's dependencies?\n${r.stdout}`);
  assert.is(inFile('wrong.ts').length, 1, `the deliberate error in wrong.ts was not reported (exit ${r.status}, ${what}):\n${r.stdout}`);
  assert.match(inFile('wrong.ts')[0]!, /error TS2322: .*not assignable to type 'number'/);
  assert.is.not(r.status, 0, 'tsc exited 0 despite the error in wrong.ts');
}

test('package - a strict nodenext TypeScript consumer typechecks against the shipped types, and a type error is reported', () => {
  needInstall();
  typecheckConsumer(APP, "installed from the project's lock");
});

test("package - installed by plain npm install (no lock, the registry's versions), the strict consumer typechecks with skipLibCheck false", () => {
  needInstall();
  mkdirSync(FRESH);
  writeFileSync(join(FRESH, 'package.json'), `${JSON.stringify({ name: 'sessiond-fresh-consumer', private: true, type: 'module' }, null, 2)}\n`);
  // what a user types: the tarball, plus uvu (the testing door's optional peer) and Node's types, in the project's ranges
  const wanted = [`../packed/${packed.filename}`, `uvu@${pkg.peerDependencies?.uvu ?? 'latest'}`, `@types/node@${pkg.devDependencies['@types/node']}`];
  const install = run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', ...wanted], {
    cwd: FRESH,
    what: `npm install ${wanted.join(' ')} (no lock)`,
    timeoutMs: 300_000,
  });
  assert.is(install.status, 0, output(install));
  const resolved = (name: string) => {
    const file = join(FRESH, 'node_modules', name, 'package.json');
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : 'not hoisted';
  };
  say(
    `resolved: ai ${resolved('ai')}, @ai-sdk/provider ${resolved('@ai-sdk/provider')}, @types/json-schema ${resolved('@types/json-schema')}, @types/node ${resolved('@types/node')}`,
  );
  typecheckConsumer(FRESH, 'installed by plain npm install');
});

test("package - a TypeScript runner: a clear error without tsx, loaded through the project's tsx with it; a .mjs runner loads", async () => {
  needInstall();
  const runnerSource = `import type { Runner } from 'sessiond';\nconst runner: Runner = async (ctx) => { void ctx; };\nexport default runner;\n`;
  writeFileSync(join(APP, 'runner.ts'), runnerSource);
  writeFileSync(join(APP, 'runner.mjs'), 'export default async function runner(ctx) { void ctx; }\n');
  const db = join(APP, 'runner.db');

  const without = await startWorker(['--runner', './runner.ts', '--db', db]);
  say(`sessiond start --runner ./runner.ts without tsx: exit ${without.code}`);
  assert.not.ok(without.running, `a .ts runner ran without a loader?\n${without.out}`);
  assert.is(without.code, 2, without.out);
  assert.match(without.out, /Cannot load runner module \.\/runner\.ts: it is TypeScript/);
  assert.match(without.out, /Compile it to JavaScript/);
  assert.match(without.out, /npm install --save-dev tsx/);

  // a project of its own with tsx in its node_modules (the project's tsx, linked)
  const withTsx = join(APP, 'with-tsx');
  mkdirSync(join(withTsx, 'node_modules'), { recursive: true });
  symlinkSync(realpathSync(join(ROOT, 'node_modules/tsx')), join(withTsx, 'node_modules/tsx'), 'dir');
  writeFileSync(join(withTsx, 'runner.ts'), runnerSource);
  const through = await startWorker(['--runner', 'with-tsx/runner.ts', '--db', db]);
  say(`sessiond start --runner with-tsx/runner.ts (tsx in that project): ${through.running ? 'running, then SIGTERM' : 'did not run'}, exit ${through.code}`);
  assert.ok(through.running, through.out);
  assert.match(through.out, /with the with-tsx\/runner\.ts runner/);
  assert.is(through.code, 0, through.out);

  const js = await startWorker(['--runner', './runner.mjs', '--db', db]);
  say(`sessiond start --runner ./runner.mjs: ${js.running ? 'running, then SIGTERM' : 'did not run'}, exit ${js.code}`);
  assert.ok(js.running, js.out);
  assert.is(js.code, 0, js.out);
});

test('package - the NATS harness finds nats.conf in the package and nats-server from SESSIOND_NATS_SERVER, and says what to install without one', () => {
  needInstall();
  writeFileSync(
    join(APP, 'nats.mjs'),
    `
import { startNatsServer } from 'sessiond/testing';
try {
  const server = await startNatsServer();
  console.log(JSON.stringify({ url: server.url }));
  await server.dispose();
} catch (err) {
  console.log(JSON.stringify({ error: err.message }));
}
`,
  );
  assert.ok(existsSync(NATS_SERVER_BIN), `this test needs a nats-server (${NATS_SERVER_BIN}), as every NATS test does`);
  const found = run(process.execPath, ['nats.mjs'], {
    cwd: APP,
    env: { SESSIOND_NATS_SERVER: NATS_SERVER_BIN },
    what: 'startNatsServer from the package (SESSIOND_NATS_SERVER set)',
  });
  assert.is(found.status, 0, output(found));
  assert.match(found.stdout, /"url":"nats:\/\/127\.0\.0\.1:\d+"/, output(found));

  // no SESSIOND_NATS_SERVER, a PATH with node alone, Debian's path pointed at nothing
  const env = childEnv({ PATH: dirname(process.execPath), SESSIOND_DEBIAN_NATS_SERVER: join(temp, 'no-nats-server') });
  delete env.SESSIOND_NATS_SERVER;
  const none = spawnSync(process.execPath, ['nats.mjs'], { cwd: APP, env, encoding: 'utf8' });
  assert.is(none.status, 0, output(none));
  const message = (JSON.parse(none.stdout.trim()) as { error?: string }).error ?? '';
  say(`without a nats-server: ${message.slice(0, 100)}...`);
  assert.match(message, /^nats-server not found \(SESSIOND_NATS_SERVER is not set, none is on the PATH/);
  assert.match(message, /put it on the PATH, or set SESSIOND_NATS_SERVER/);
  assert.not.match(message, /scripts\/tools\.mjs/, 'an installed package has no scripts/tools.mjs to suggest');
});

test('package - the tarball holds dist, docs, README.md, LICENSE, the NATS configs and package.json, nothing else', () => {
  needInstall();
  const paths = packed.files.map((f) => f.path);
  const top = [...new Set(paths.map((p) => p.split('/')[0]!))].sort();
  assert.equal(top, ['LICENSE', 'README.md', 'dist', 'docs', 'nats-cluster.conf', 'nats.conf', 'package.json']);
  for (const dir of ['src', 'test', 'bench', 'chaos', 'scripts', 'examples', 'bin', '.tools', 'node_modules']) {
    assert.not.ok(
      paths.some((p) => p.startsWith(`${dir}/`)),
      `the tarball holds ${dir}/`,
    );
  }
  const sources = paths.filter((p) => /\.[cm]?tsx?$/.test(p) && !/\.d\.[cm]?ts$/.test(p));
  assert.equal(sources, [], 'TypeScript sources in the tarball');
  const targets = [...Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : [e.types, e.import])), ...Object.values(pkg.bin)];
  for (const target of targets) assert.ok(paths.includes(target.replace(/^\.\//, '')), `package.json names ${target}, which is not in the tarball`);
  assert.ok(paths.includes('dist/inspector/client.js'), "the inspector's page script (read at run time) is not in the tarball");
  assert.ok(paths.includes('dist/inspector/conversation-view.js'), "the inspector's conversation script (read at run time) is not in the tarball");
  say(`${paths.length} files; top level: ${top.join(', ')}; every exports target and the bin are there`);
});

// last: it deletes packages from the temporary project
test('package - sessiond/client loads without better-sqlite3 and xstate', () => {
  needInstall();
  for (const dir of ['better-sqlite3', 'xstate', '@xstate']) rmSync(join(APP, 'node_modules', dir), { recursive: true, force: true });
  writeFileSync(
    join(APP, 'client.mjs'),
    `
const client = await import('sessiond/client');
let root;
try { await import('sessiond'); root = 'loaded'; } catch (err) { root = err.code + ': ' + err.message.split('\\n')[0]; }
console.log(JSON.stringify({ SessiondClient: typeof client.SessiondClient, decodeEvent: typeof client.decodeEvent, root }));
`,
  );
  const r = run(process.execPath, ['client.mjs'], { cwd: APP, what: 'node client.mjs (better-sqlite3, xstate and @xstate/* deleted)' });
  assert.is(r.status, 0, output(r));
  const result = JSON.parse(r.stdout.trim()) as { SessiondClient: string; decodeEvent: string; root: string };
  assert.is(result.SessiondClient, 'function');
  assert.is(result.decodeEvent, 'function');
  assert.match(
    result.root,
    /^ERR_MODULE_NOT_FOUND: .*(better-sqlite3|xstate)/,
    `sessiond itself still loaded: the packages were not really gone (${result.root})`,
  );
  say(`sessiond/client loaded; sessiond itself: ${result.root}`);
});

test.run();
