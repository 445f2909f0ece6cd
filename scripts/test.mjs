#!/usr/bin/env node
// `npm test`: typecheck, format and lint, then every test/**/*.test.ts with uvu, one process per file (two at a
// time), then the Go and Python clients' tests (clients/go, clients/python), then the slowest files and one closing
// line `N passed, N failed` that counts everything that ran (a crashed file counts as failed).
// Extra arguments are a file pattern (e.g. `npm test -- machine`).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ensureTools, toolPath } from './tools.mjs';
import { inProcess, mergeDurations, orderJobs, readDurations } from './test-order.mjs';
import { UVU } from './uvu-command.mjs';

const started = Date.now();
/** A file (or client suite) still running after this is stopped and counted as failed: a hang costs minutes, not the whole run. */
const TIMEOUT_MS = Number(process.env.SESSIOND_TEST_TIMEOUT_MS ?? 8 * 60_000);
/** A file whose process has printed uvu's summary but does not exit (a handle a failed test left open) is stopped after this. */
const EXIT_GRACE_MS = 30_000;

function run(cmd, args, { capture = false, quiet = false } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let text = '';
    const timer = setTimeout(() => {
      process.stderr.write(`\ntest run exceeded ${TIMEOUT_MS} ms; stopping it\n`);
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    let lingering;
    if (capture) {
      child.stdout.on('data', (d) => {
        text += d;
        if (!quiet) process.stdout.write(d);
        if (!lingering && /Duration:\s+[\d.]+m?s/.test(text)) {
          lingering = setTimeout(() => {
            process.stderr.write(`\nthe file printed its results but did not exit within ${EXIT_GRACE_MS} ms (an open handle); stopping it\n`);
            child.kill('SIGKILL');
          }, EXIT_GRACE_MS);
        }
      });
      child.stderr.on('data', (d) => {
        text += d;
        if (!quiet) process.stderr.write(d);
      });
    }
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(lingering);
      resolve({ code: code ?? (signal ? 1 : 0), text });
    });
  });
}

// The project's pinned nats-server and natscli (scripts/tools.mjs), built with Go when missing; every
// NATS test, the cluster suite and the fault suite run on it. Debian's nats-server below is for the
// single-server compatibility test.
const toolProblems = ensureTools();
if (toolProblems.length > 0) {
  process.stdout.write(`${toolProblems.join('\n')}\n0 passed, 1 failed\n`);
  process.exit(1);
}
process.env.SESSIOND_NATS_SERVER ??= toolPath('nats-server');
process.env.SESSIOND_NATS_CLI ??= toolPath('nats');

// What the suite needs beyond npm, from Debian's packages: installed here when missing (as root with
// apt-get), otherwise one line saying what to run, before any test starts.
const needs = [
  {
    what: "Debian's nats-server (its compatibility test)",
    pkg: 'nats-server',
    present: () => existsSync(process.env.SESSIOND_DEBIAN_NATS_SERVER ?? '/usr/sbin/nats-server'),
  },
  { what: 'faketime (clock skew in the cluster and fault suites)', pkg: 'faketime', present: () => existsSync('/usr/bin/faketime') },
  { what: 'chromium (the inspector browser test)', pkg: 'chromium', present: () => existsSync('/usr/bin/chromium') },
  {
    what: 'python3-msgpack (the wire-format interop test)',
    pkg: 'python3-msgpack',
    present: () => spawnSync('/usr/bin/python3', ['-c', 'import msgpack'], { stdio: 'ignore' }).status === 0,
  },
];
const missing = needs.filter((n) => !n.present());
if (missing.length > 0) {
  const pkgs = missing.map((n) => n.pkg).join(' ');
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (root && apt) {
    process.stdout.write(`installing what the tests need: ${missing.map((n) => n.what).join(', ')} (apt-get install -y ${pkgs})...\n`);
    const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    const install =
      update.status === 0
        ? spawnSync('apt-get', ['install', '-y', '-qq', ...missing.map((n) => n.pkg)], {
            stdio: 'inherit',
            env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
          })
        : update;
    const still = missing.filter((n) => !n.present());
    if (install.status !== 0 || still.length > 0) {
      process.stdout.write(`could not install ${still.map((n) => n.pkg).join(' ') || pkgs}; run: apt-get install -y ${pkgs}\n0 passed, 1 failed\n`);
      process.exit(1);
    }
  } else {
    process.stdout.write(
      `the tests need ${missing.map((n) => n.what).join(', ')}: run  sudo apt-get install -y ${pkgs}  and then npm test again (no test was run)\n`,
    );
    process.exit(1);
  }
}

const filter = process.argv[2];
let typecheckFailed = 0;
if (!filter && !process.env.SESSIOND_TEST_DIR) {
  process.stdout.write('typecheck (tsc --noEmit)...\n');
  const tsc = await run(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']);
  typecheckFailed = tsc.code === 0 ? 0 : 1;
  process.stdout.write(tsc.code === 0 ? 'typecheck ok\n' : 'typecheck FAILED\n');
  // the formatter and the linter (biome.json): `npm run format` rewrites what this refuses
  process.stdout.write('format and lint (biome ci)...\n');
  const lint = await run(process.execPath, ['node_modules/@biomejs/biome/bin/biome', 'ci', '.']);
  if (lint.code !== 0) typecheckFailed++;
  process.stdout.write(lint.code === 0 ? 'format and lint ok\n' : 'format or lint FAILED: run npm run format, then fix what npm run lint still reports\n');
}
// One uvu process per test file: a file that crashes (an import that throws, a promise that never
// settles, a test that kills its process) is counted as failed and the run goes on with the next.
const dir = process.env.SESSIOND_TEST_DIR ?? 'test';
const match = new RegExp(filter ? `(?:${filter}).*\\.test\\.ts$` : '\\.test\\.ts$');
const files = [];
(function walk(d) {
  for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(d, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (match.test(relative(dir, path))) files.push(relative(dir, path));
  }
})(dir);
const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
let passed = 0;
let failed = typecheckFailed;
let skipped = 0;
const crashed = [];
const durations = [];

// The CLI the tests spawn (test/support/cli.ts): compiled once here (about 10 s), it starts in half
// the time tsx needs, and the suite starts it about a thousand times.
if (!process.env.SESSIOND_TEST_CLI && !process.env.SESSIOND_TEST_DIR) {
  const build = await run(process.execPath, ['scripts/build.mjs'], { capture: true });
  if (build.code === 0) process.env.SESSIOND_TEST_CLI = 'dist';
  else process.stdout.write('the compiled CLI could not be built (above): the tests run the CLI through tsx\n');
}

// Files run JOBS at a time (SESSIOND_TEST_JOBS, default 3 on 2 cores: most wait on processes and
// timers, not the CPU), each file's output printed whole when it ends. Files that time failovers, freeze processes or
// install packages run one at a time, with one lane of other work beside them (below).
const JOBS = Math.max(1, Number(process.env.SESSIOND_TEST_JOBS ?? 3));
const ALONE = /^(cluster\/|chaos\/|package\/pack|recovery\/crash|nats\/(frozen-worker|command-burst|append-answers|session-calls)|runner\/session-tools)/;
// longest first (scripts/test-order.mjs), so the run does not end on one long file
const MEASURED = join('.tools', 'test-durations.json');
const measured = readDurations(MEASURED);
const committed = readDurations(join('test', 'durations.json'));

async function runFile(file) {
  const fileStarted = Date.now();
  const uvu = await run(process.execPath, [...UVU, dir, `^${escapeRegex(file)}$`, '--no-color'], {
    capture: true,
    quiet: JOBS > 1,
  });
  if (JOBS > 1) process.stdout.write(uvu.text);
  const num = (label) => Number((uvu.text.match(new RegExp(`${label}:\\s+(\\d+)`)) ?? [])[1] ?? 0);
  const total = num('Total');
  passed += num('Passed');
  skipped += num('Skipped');
  let fileFailed = total - num('Passed') - num('Skipped');
  if ((uvu.code !== 0 && fileFailed === 0) || total === 0) {
    fileFailed = Math.max(fileFailed, 1); // the file crashed or never ran its tests
    crashed.push(file);
  }
  failed += fileFailed;
  durations.push({ file, ms: Date.now() - fileStarted });
}
// The Go and Python clients' suites (scripts/language-suites.mjs), each in a process of its own beside the
// files, each test counted; a pattern runs them when it matches their folder (`npm test -- clients/`).
const SUITES = { 'clients/go': 'goSuite', 'clients/python': 'pythonSuite' };
const suites = Object.keys(SUITES).filter((folder) => !process.env.SESSIOND_TEST_DIR && (!filter || new RegExp(filter).test(folder)));
async function runSuite(folder) {
  const suiteStarted = Date.now();
  const code = `const m = await import(${JSON.stringify(new URL('./language-suites.mjs', import.meta.url).href)}); await m.${SUITES[folder]}();`;
  const out = await run(process.execPath, ['--input-type=module', '-e', code], { capture: true, quiet: JOBS > 1 });
  if (JOBS > 1) process.stdout.write(out.text);
  const counts = out.text.match(new RegExp(`${escapeRegex(folder)}: (\\d+) passed, (\\d+) failed`));
  passed += Number(counts?.[1] ?? 0);
  failed += counts ? Number(counts[2]) : 1; // no count line: the suite crashed
  if (!counts) crashed.push(folder);
  durations.push({ file: folder, ms: Date.now() - suiteStarted });
}
const runJob = (job) => (SUITES[job] ? runSuite(job) : runFile(job));
/** Runs the jobs of `queue` (taking them from it, in order) `jobs` at a time. */
async function pool(queue, jobs) {
  await Promise.all(
    Array.from({ length: Math.min(jobs, queue.length) }, async () => {
      while (queue.length > 0) await runJob(queue.shift());
    }),
  );
}
// a client suite never measured counts as long (about two minutes each)
const jobs = orderJobs([...files, ...suites], measured, committed, (job) => (SUITES[job] ? 120_000 : 0));
// The files that run alone go one at a time. Beside them one lane runs the client suites (compilers
// and their own processes), then, until the alone ones are done, the other files that start no
// process or thread of their own (scripts/test-order.mjs `inProcess`), longest first: both cores
// stay busy and no test timing its own processes runs beside a failover. What is left then runs
// JOBS at a time.
const rest = jobs.filter((f) => !ALONE.test(f) && !SUITES[f]);
let aloneDone = false;
const besideAlone = async () => {
  for (;;) {
    const next = rest.findIndex((f) => inProcess(join(dir, f)));
    if (aloneDone || next === -1) return;
    await runJob(rest.splice(next, 1)[0]);
  }
};
await Promise.all([
  pool(
    jobs.filter((f) => ALONE.test(f)),
    1,
  ).then(() => {
    aloneDone = true;
  }),
  pool(
    jobs.filter((f) => SUITES[f]),
    1,
  ).then(besideAlone),
]);
await pool(rest, JOBS);
if (files.length === 0 && suites.length === 0) {
  process.stdout.write(`no test file matches ${match} under ${dir}\n`);
  failed = Math.max(failed, 1);
}
const secs = ((Date.now() - started) / 1000).toFixed(1);
if (durations.length > 5) {
  const slowest = durations.sort((a, b) => b.ms - a.ms).slice(0, 10);
  process.stdout.write(`\nslowest files: ${slowest.map((d) => `${d.file} ${(d.ms / 1000).toFixed(1)} s`).join(', ')}\n`);
  mkdirSync('.tools', { recursive: true });
  writeFileSync(MEASURED, `${JSON.stringify(mergeDurations(measured, durations), null, 1)}\n`);
}
if (crashed.length > 0) process.stdout.write(`\ncrashed (counted as failed, the run went on): ${crashed.join(', ')}\n`);
process.stdout.write(
  `\n(${files.length} files${suites.length ? ` and ${suites.length} client suites` : ''}, ${secs} s${typecheckFailed ? ', typecheck or lint failed' : ''}${skipped ? `, ${skipped} skipped` : ''})\n`,
);
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
