#!/usr/bin/env node
// The project's own build of nats-server and natscli, pinned here and nowhere else.
//
//   node scripts/tools.mjs          builds what is missing into .tools/bin (ignored), prints the paths
//   node scripts/tools.mjs --check  exits 1 when a pinned tool is missing or another version
//
// Each is `go install MODULE@VERSION` (nats-server's documented install) with GOBIN=.tools/bin; a
// binary that is already there and reports the pinned version is reused. `npm test`, `.ci/run`, the
// bench and the fault suite point at the result (SESSIOND_NATS_SERVER); Debian's nats-server
// (`apt-get install nats-server`, 2.9.10 on bookworm) stays supported for one server and has its own
// compatibility test (test/nats/debian-server.test.ts).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const NATS_SERVER_VERSION = '2.15.2';
export const NATSCLI_VERSION = '0.5.0';
/** Jaeger, the real collector of the trace tests (test/cli/jaeger-trace.test.ts). */
export const JAEGER_VERSION = '1.75.0';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const TOOLS_BIN = join(root, '.tools', 'bin');

export const TOOLS = [
  { name: 'nats-server', module: 'github.com/nats-io/nats-server/v2', version: NATS_SERVER_VERSION, versionArgs: ['--version'] },
  { name: 'nats', module: 'github.com/nats-io/natscli/nats', version: NATSCLI_VERSION, versionArgs: ['--version'] },
  // Jaeger's module is built as a tool of a throwaway module (its own go.mod has replace directives
  // `go install` refuses); its binary does not print its version, so the build info is read
  {
    name: 'jaeger',
    module: 'github.com/jaegertracing/jaeger',
    package: 'github.com/jaegertracing/jaeger/cmd/jaeger',
    version: JAEGER_VERSION,
    buildInfo: true,
  },
];

export const toolPath = (name) => join(TOOLS_BIN, name);

/** The version a built tool reports, or undefined when it is missing or does not run. */
function installedVersion(tool) {
  const bin = toolPath(tool.name);
  if (!existsSync(bin)) return undefined;
  if (tool.buildInfo) {
    const info = spawnSync(goBinary() ?? 'go', ['version', '-m', bin], { encoding: 'utf8' });
    const escaped = tool.module.replace(/[.]/g, '\\.');
    return new RegExp(`${escaped}\\s+v(\\d+\\.\\d+\\.\\d+)`).exec(info.stdout ?? '')?.[1];
  }
  const out = spawnSync(bin, tool.versionArgs, { encoding: 'utf8' });
  const m = /v?(\d+\.\d+\.\d+)/.exec(`${out.stdout ?? ''}${out.stderr ?? ''}`);
  return m?.[1];
}

/** Go from PATH, else its usual install folder. */
function goBinary() {
  if (spawnSync('sh', ['-c', 'command -v go'], { stdio: 'ignore' }).status === 0) return 'go';
  return existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined;
}

export function missingTools() {
  return TOOLS.filter((t) => installedVersion(t) !== t.version);
}

/** Builds every pinned tool that is missing; returns a problem per tool it could not build (empty when all are there). */
export function ensureTools({ say = (line) => process.stdout.write(`${line}\n`) } = {}) {
  const problems = [];
  const missing = missingTools();
  if (missing.length === 0) return problems;
  const go = goBinary();
  if (!go) {
    return missing.map(
      (t) =>
        `${t.name} ${t.version} is not built and Go is not installed: install Go 1.24 or newer (https://go.dev/doc/install) and run node scripts/tools.mjs`,
    );
  }
  mkdirSync(TOOLS_BIN, { recursive: true });
  for (const tool of missing) {
    const started = Date.now();
    say(`building ${tool.name} ${tool.version} (go install ${tool.module}@v${tool.version}, into .tools/bin; a few minutes the first time)...`);
    const env = { ...process.env, GOBIN: TOOLS_BIN, CGO_ENABLED: '0', GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() };
    const r = tool.package
      ? buildAsTool(go, tool, env)
      : spawnSync(go, ['install', `${tool.module}@v${tool.version}`], { stdio: ['ignore', 'inherit', 'inherit'], env });
    const got = installedVersion(tool);
    if (r.status !== 0 || got !== tool.version) {
      problems.push(`go install ${tool.module}@v${tool.version} failed (exit ${r.status}${got ? `, built ${got}` : ''}); see its output above`);
    } else {
      say(`built ${tool.name} ${tool.version} in ${Math.round((Date.now() - started) / 1000)} s`);
    }
  }
  return problems;
}

/** Builds `tool.package` at its pinned version as a tool of a throwaway module (`go get -tool`, then `go build`). */
function buildAsTool(go, tool, env) {
  const dir = mkdtempSync(join(tmpdir(), `sessiond-${tool.name}-`));
  try {
    const run = (args) => spawnSync(go, args, { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'], env });
    for (const args of [
      ['mod', 'init', `sessiond.tools/${tool.name}`],
      ['get', '-tool', `${tool.package}@v${tool.version}`],
      ['build', '-o', toolPath(tool.name), tool.package],
    ]) {
      const r = run(args);
      if (r.status !== 0) return r;
    }
    return { status: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const missing = missingTools();
    for (const t of missing) process.stdout.write(`${t.name} ${t.version} is not built: run node scripts/tools.mjs\n`);
    process.exit(missing.length === 0 ? 0 : 1);
  }
  const problems = ensureTools();
  for (const p of problems) process.stderr.write(`${p}\n`);
  if (problems.length > 0) process.exit(1);
  for (const t of TOOLS) process.stdout.write(`${t.name} ${t.version}: ${toolPath(t.name)}\n`);
}
