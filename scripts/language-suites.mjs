// The Go and Python clients' test suites (clients/go, clients/python), run by `npm test` after the
// TypeScript files, each counted into the closing `N passed, N failed` line test by test:
//   go test -json ./...   in clients/go (modules from the Go module proxy; Go on the PATH or /usr/local/go)
//   pytest                in a venv of its own, .tools/venv-python, made on first use with
//                         `pip install -e clients/python[test]` from PyPI (and again when pyproject.toml changes)
// and the checkers, each one pass or one failure: go vet ./..., ruff check and mypy (strict, as
// clients/python/pyproject.toml configures them).
// Each suite starts its own nats-server and workers (clients/testing/world.ts).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('..', import.meta.url).pathname;
const VENV = join(ROOT, '.tools', 'venv-python');
const TIMEOUT_MS = 10 * 60_000;

function go() {
  for (const candidate of ['go', '/usr/local/go/bin/go']) {
    if (spawnSync(candidate, ['version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

/** Runs a command, echoing its output (`echo` may reshape each line), and resolves with its exit code and output. */
function run(cmd, args, { cwd, env, echo = (line) => line } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    let partial = '';
    const timer = setTimeout(() => {
      process.stderr.write(`\n${cmd} ${args.join(' ')} exceeded ${TIMEOUT_MS} ms; stopping it\n`);
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    const take = (d) => {
      text += d;
      partial += d;
      const lines = partial.split('\n');
      partial = lines.pop();
      for (const line of lines) {
        const shown = echo(line);
        if (shown !== undefined) process.stdout.write(`${shown}\n`);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (partial) take('\n');
      resolve({ code: code ?? (signal ? 1 : 0), text });
    });
  });
}

/** A checker (go vet, ruff, mypy) counted as one test: its output shown when it fails. */
async function checker(name, cmd, args, cwd) {
  const result = await run(cmd, args, { cwd, echo: () => undefined });
  if (result.code === 0) {
    process.stdout.write(`  • ${name}\n`);
    return { passed: 1, failed: 0 };
  }
  process.stdout.write(`  ✘ ${name}\n${result.text.replace(/^/gm, '    ')}\n`);
  return { passed: 0, failed: 1, failure: name };
}

/** `go test -json ./...` in clients/go: each test that passed or failed (subtests too), and a failed build as one failure. */
export async function goSuite() {
  process.stdout.write('\nclients/go (go test ./...)\n');
  const bin = go();
  if (!bin) {
    process.stdout.write('  Go is not installed (https://go.dev/dl, or apt-get install golang-go): the Go client was not tested\n');
    return { passed: 0, failed: 1 };
  }
  let passed = 0;
  let failed = 0;
  const failures = [];
  const result = await run(bin, ['test', '-json', '-count=1', './...'], {
    cwd: join(ROOT, 'clients', 'go'),
    env: { GOFLAGS: '-mod=readonly' },
    echo: (line) => {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        return `  ${line}`; // build output
      }
      if (event.Action === 'output' && event.Output && !/^(=== RUN|=== PAUSE|=== CONT|--- PASS|PASS$|ok\s)/.test(event.Output.trim())) {
        return `  ${event.Output.replace(/\n$/, '')}`;
      }
      if (event.Test && (event.Action === 'pass' || event.Action === 'fail')) {
        if (event.Action === 'pass') passed++;
        else {
          failed++;
          failures.push(`${event.Package} ${event.Test}`);
        }
        return `  ${event.Action === 'pass' ? '•' : '✘'} ${event.Test} (${event.Elapsed ?? 0} s)`;
      }
      if (!event.Test && event.Action === 'fail') failures.push(`${event.Package} (package failed)`);
      return undefined;
    },
  });
  if (result.code !== 0 && failed === 0) failed = 1; // the build or a package failed outside any test
  const vet = await checker('go vet ./...', bin, ['vet', './...'], join(ROOT, 'clients', 'go'));
  passed += vet.passed;
  failed += vet.failed;
  if (vet.failure) failures.push(vet.failure);
  if (failures.length > 0) process.stdout.write(`  failed: ${failures.join(', ')}\n`);
  process.stdout.write(`  clients/go: ${passed} passed, ${failed} failed\n`);
  return { passed, failed };
}

/** The venv for the Python client's tests, (re)installed when clients/python/pyproject.toml changed. */
async function pythonVenv() {
  const pyproject = join(ROOT, 'clients', 'python', 'pyproject.toml');
  const stamp = join(VENV, '.sessiond-pyproject-sha256');
  const want = createHash('sha256').update(readFileSync(pyproject)).digest('hex');
  const python = join(VENV, 'bin', 'python');
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return python;
  process.stdout.write(`  making the Python venv ${VENV} (pip install -e clients/python[test] from PyPI)...\n`);
  mkdirSync(join(ROOT, '.tools'), { recursive: true });
  const made = await run('python3', ['-m', 'venv', '--clear', VENV], { echo: (l) => `  ${l}` });
  if (made.code !== 0) throw new Error(`python3 -m venv failed (on Debian: apt-get install python3-venv)`);
  const installed = await run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-e', `${join(ROOT, 'clients', 'python')}[test]`], {
    echo: (l) => `  ${l}`,
  });
  if (installed.code !== 0) throw new Error('pip install -e clients/python[test] failed (see above)');
  writeFileSync(stamp, want);
  return python;
}

/** pytest in clients/python: its counts of passed, failed and errored tests. */
export async function pythonSuite() {
  process.stdout.write('\nclients/python (pytest)\n');
  let python;
  try {
    python = await pythonVenv();
  } catch (err) {
    process.stdout.write(`  ${err.message}: the Python client was not tested\n`);
    return { passed: 0, failed: 1 };
  }
  const result = await run(python, ['-m', 'pytest', '-p', 'no:cacheprovider', '-rfE', join(ROOT, 'clients', 'python')], {
    cwd: ROOT,
    echo: (line) => `  ${line}`,
  });
  const summary =
    result.text
      .trim()
      .split('\n')
      .reverse()
      .find((l) => /\d+ (passed|failed|error)/.test(l)) ?? '';
  const count = (word) => Number((summary.match(new RegExp(`(\\d+) ${word}`)) ?? [])[1] ?? 0);
  let passed = count('passed');
  let failed = count('failed') + count('errors?');
  if (result.code !== 0 && failed === 0) failed = 1; // pytest itself failed (collection, no tests)
  const dir = join(ROOT, 'clients', 'python');
  for (const [name, args] of [
    ['ruff check', ['-m', 'ruff', 'check', '--no-cache', '.']],
    ['mypy (strict)', ['-m', 'mypy', '--no-incremental', '--cache-dir', '/dev/null']],
  ]) {
    const r = await checker(name, python, args, dir);
    passed += r.passed;
    failed += r.failed;
  }
  process.stdout.write(`  clients/python: ${passed} passed, ${failed} failed\n`);
  return { passed, failed };
}
