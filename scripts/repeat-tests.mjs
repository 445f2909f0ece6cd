#!/usr/bin/env node
// Runs test files many times, optionally with every core kept busy, to find flaky tests.
//
//   node scripts/repeat-tests.mjs [--runs 20] [--load] FILE...   (FILE relative to test/)
//
// --load starts one busy loop per core (as `yes > /dev/null` does) for the whole run. Each failed
// run's output is kept in .tools/flakes/; the last line says how many runs of each file failed.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { UVU } from './uvu-command.mjs';

const { values, positionals } = parseArgs({
  options: { runs: { type: 'string', default: '20' }, load: { type: 'boolean', default: false } },
  allowPositionals: true,
});
if (positionals.length === 0) {
  process.stderr.write('usage: node scripts/repeat-tests.mjs [--runs N] [--load] FILE... (paths under test/)\n');
  process.exit(2);
}
const runs = Number(values.runs);
const out = join('.tools', 'flakes');
mkdirSync(out, { recursive: true });
const hogs = values.load ? Array.from({ length: availableParallelism() }, () => spawn('yes', { stdio: ['ignore', 'ignore', 'ignore'] })) : [];
const stopHogs = () => {
  for (const h of hogs) h.kill('SIGKILL');
};
process.on('exit', stopHogs);
process.on('SIGINT', () => process.exit(130));

const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
function runOnce(file) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...UVU, 'test', `^${escapeRegex(file)}$`, '--no-color'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    child.on('close', (code) => resolve({ ok: code === 0 && /Passed:\s+\d+/.test(text) && !/Total:\s+0\b/.test(text), text }));
  });
}

const summary = [];
for (const file of positionals) {
  let failed = 0;
  for (let i = 1; i <= runs; i++) {
    const started = Date.now();
    const { ok, text } = await runOnce(file);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    if (!ok) {
      failed++;
      const saved = join(out, `${file.replace(/[/.]/g, '_')}-${i}.log`);
      writeFileSync(saved, text);
      process.stdout.write(`${file} run ${i}/${runs}: FAILED in ${secs} s (output in ${saved})\n`);
    } else process.stdout.write(`${file} run ${i}/${runs}: passed in ${secs} s\n`);
  }
  summary.push(`${file}: ${failed} of ${runs} failed`);
}
stopHogs();
process.stdout.write(`${summary.join('\n')}${values.load ? ` (with ${hogs.length} busy loops)` : ''}\n`);
process.exit(summary.some((l) => !l.includes(': 0 of')) ? 1 : 0);
