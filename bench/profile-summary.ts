/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): the top functions by self time and by total
 * (inclusive) time, and time by package/area, so a missed target can be explained in a few lines.
 *
 *   node --cpu-prof --cpu-prof-dir=bench/results/profiles --import tsx bench/run.ts --only projector
 *   npx tsx bench/profile-summary.ts bench/results/profiles/<file>.cpuprofile [--top 25] [--under NAME]
 *
 * --under NAME counts only samples whose stack contains a function named NAME (e.g. rebuildProjection).
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a) && args[args.indexOf(a) - 1] !== '--under');
if (!file) {
  process.stderr.write('usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [--top N] [--under FUNCTION]\n');
  process.exit(2);
}
const top = Number(args[args.indexOf('--top') + 1] ?? 25) || 25;
const under = args.includes('--under') ? args[args.indexOf('--under') + 1] : undefined;
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function where(url: string): string {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('node_modules/');
  if (nm >= 0) return u.slice(nm + 13);
  const repo = u.indexOf('/main/');
  return repo >= 0 ? u.slice(repo + 6) : u;
}
const key = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}${n.callFrame.url ? `:${n.callFrame.lineNumber + 1}` : ''}`;
function area(n: Node): string {
  const w = where(n.callFrame.url);
  if (!w) return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : '(native/builtin)';
  if (w.startsWith('node:')) return w.split('/')[0]!;
  if (!n.callFrame.url.includes('node_modules')) return w.split('/').slice(0, 2).join('/');
  const parts = w.split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

const selfTime = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const stack = (id: number): Node[] => {
  const out: Node[] = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) out.push(byId.get(cur)!);
  return out;
};

const self = new Map<string, number>();
const total = new Map<string, number>();
const areas = new Map<string, number>();
let counted = 0;
for (const [id, us] of selfTime) {
  const frames = stack(id);
  if (under && !frames.some((f) => f.callFrame.functionName === under)) continue;
  counted += us;
  const node = byId.get(id)!;
  self.set(key(node), (self.get(key(node)) ?? 0) + us);
  areas.set(area(node), (areas.get(area(node)) ?? 0) + us);
  for (const k of new Set(frames.map(key))) total.set(k, (total.get(k) ?? 0) + us);
}

const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / counted).toFixed(1).padStart(5)}%`;
const print = (title: string, m: Map<string, number>, n: number, filter: (k: string) => boolean = () => true) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, us] of [...m]
    .filter(([k]) => filter(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n))
    process.stdout.write(`  ${ms(us)}  ${k}\n`);
};
process.stdout.write(
  `${file}: ${(counted / 1000).toFixed(0)} ms sampled${under ? ` under ${under}` : ''} (profile ${((profile.endTime - profile.startTime) / 1000).toFixed(0)} ms)\n`,
);
print('by area (self time)', areas, 15);
print('top functions by self time', self, top);
print('top functions by total time (sessiond code)', total, top, (k) => / src\//.test(k));
