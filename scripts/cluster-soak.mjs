#!/usr/bin/env node
// The cluster failover soak: runs the failover tests (failover*.test.ts, faults (a)-(g)) and the
// durability tests of test/cluster/ again and again (each round a fresh 3-server cluster per test,
// real workers, real SIGKILLs, partitions, SIGSTOPs), stops at the
// first failing round unless --keep-going, and ends with one line `N passed, N failed` (rounds).
//
//   node scripts/cluster-soak.mjs [--rounds N] [--minutes M] [--replicas 1|3] [--keep-going]
//
// --rounds (default 10) or --minutes bounds it (whichever comes first when both are given).
// --replicas forces the events stream's replicas (SESSIOND_CLUSTER_REPLICAS; by default the tests
// pick 3 on a nats-server that fences replicated streams, else 1). A failing round keeps its output
// in a temp file (and the tests keep the workers' output in /tmp/sessiond-cluster-failure-*).
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { UVU } from './uvu-command.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: { rounds: { type: 'string' }, minutes: { type: 'string' }, replicas: { type: 'string' }, 'keep-going': { type: 'boolean', default: false } },
});
const rounds = values.rounds !== undefined ? Number(values.rounds) : values.minutes !== undefined ? Infinity : 10;
const until = values.minutes !== undefined ? Date.now() + Number(values.minutes) * 60_000 : Infinity;
if (
  !(rounds >= 1) ||
  (values.minutes !== undefined && !(Number(values.minutes) > 0)) ||
  (values.replicas !== undefined && !['1', '3'].includes(values.replicas))
) {
  process.stderr.write('usage: node scripts/cluster-soak.mjs [--rounds N] [--minutes M] [--replicas 1|3] [--keep-going]\n');
  process.exit(2);
}

function round() {
  return new Promise((resolve) => {
    const env = { ...process.env, FORCE_COLOR: '0', ...(values.replicas ? { SESSIOND_CLUSTER_REPLICAS: values.replicas } : {}) };
    const child = spawn(process.execPath, [...UVU, 'test', 'cluster/(failover(-[a-z]+)?|durability)\\.test\\.ts$'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('close', (code) => resolve({ code: code ?? 1, out }));
  });
}

let passed = 0;
let failed = 0;
for (let i = 1; i <= rounds && Date.now() < until; i++) {
  const t0 = Date.now();
  const { code, out } = await round();
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  const figure = /\[(cluster [a-g]|durability \d)\]/;
  const lines = out
    .split('\n')
    .filter((l) => figure.test(l))
    .map((l) => `    ${l.slice(l.search(figure))}`);
  if (code === 0) {
    passed++;
    process.stdout.write(`round ${i}: passed in ${seconds} s\n${lines.join('\n')}\n`);
  } else {
    failed++;
    const dir = mkdtempSync(join(tmpdir(), 'sessiond-cluster-soak-'));
    writeFileSync(join(dir, `round-${i}.log`), out);
    process.stdout.write(`round ${i}: FAILED in ${seconds} s; its output is in ${join(dir, `round-${i}.log`)}\n`);
    if (!values['keep-going']) break;
  }
}
process.stdout.write(`${passed} passed, ${failed} failed\n`);
process.exit(failed === 0 ? 0 : 1);
