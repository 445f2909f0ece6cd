/**
 * Every fenced code block of README.md and docs/*.md is checked by its language, so the docs cannot
 * drift from the code (the conventions are at the top of docs/testing.md):
 *
 * - `ts`, `typescript`, `js`: type-checked, all in one TypeScript program (test/support/doc-typecheck.ts).
 * - `sh`, `bash`, `shell`: each `sessiond` / `npx sessiond` command must exist with the options and
 *   arguments it is given (read from the commander program src/cli/program.ts builds; nothing runs),
 *   each `npm run X` / `npm test` / `npm start` must name a script of package.json, and `node` /
 *   `tsx` a file that exists (test/support/doc-shell.ts). `text` and `console` blocks are output; their
 *   `$ ` lines are commands, checked the same way.
 * - `json`: parses. `yaml`, `yml`, `conf`: not empty.
 * - any other language, or none: fails, asking for a label.
 *
 * Each finding reads `FILE:LINE (lang): what is wrong`. The README's set-up block must hold the two
 * set-up commands (`npm ci && npm start`, `npm ci && npm test`) and they must run what it says.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildProgram } from '../../src/cli/program.ts';
import { extractBlocks, where, type CodeBlock } from '../support/doc-blocks.ts';
import { checkCommand, checkSessiond, logicalLines, simpleCommands, type ShellContext } from '../support/doc-shell.ts';
import { DOORS, isTypeScript, typecheckBlocks } from '../support/doc-typecheck.ts';
import { EventEmitter } from 'node:events';
import { watchStdout } from '../../src/cli/stdout-closed.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = [
  'README.md',
  ...readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string>; exports?: Record<string, string> };
const shell: ShellContext = {
  program: buildProgram({
    out: () => {},
    err: () => {},
    stdout: watchStdout(new EventEmitter()),
    env: {},
    defaultDb: '.sessiond/sessiond.db',
    defaultNats: undefined,
  }),
  scripts: pkg.scripts,
  root: ROOT,
};

const SHELL = new Set(['sh', 'bash', 'shell']);
const OUTPUT = new Set(['text', 'console']);
const CONFIG = new Set(['yaml', 'yml', 'conf']);

/** Go and Python blocks are excerpts of a tested file of the clients, named on their first line: `// clients/go/FILE (excerpt)`. */
const EXCERPTS: Record<string, string> = { go: '//', python: '#' };

function excerptProblems(block: CodeBlock, comment: string): string[] {
  const [first = '', ...rest] = block.code.split('\n');
  const named = new RegExp(`^${comment}\\s*(clients/\\S+) \\(excerpt\\)$`).exec(first.trim());
  if (!named) return [`${where(block)}: a ${block.lang} block starts with "${comment} clients/<file> (excerpt)", naming the tested file whose lines it shows`];
  let source: string;
  try {
    source = readFileSync(`${ROOT}${named[1]}`, 'utf8');
  } catch {
    return [`${where(block)}: ${named[1]} does not exist`];
  }
  const lines = new Set(source.split('\n').map((l) => l.trim()));
  const missing = rest.map((l, i) => ({ l: l.trim(), i })).filter(({ l }) => l !== '' && !lines.has(l));
  return missing.map(({ l, i }) => `${where(block, i + 1)}: this line is not in ${named[1]}: ${l}`);
}

/** What is wrong with the blocks that are not TypeScript (TypeScript blocks are checked together, below). */
function checkOther(block: CodeBlock): string[] {
  if (SHELL.has(block.lang) || OUTPUT.has(block.lang)) {
    const out: string[] = [];
    for (const { text, offset } of logicalLines(block.code)) {
      const command = OUTPUT.has(block.lang) ? /^\s*\$ (.*)$/.exec(text)?.[1] : text;
      if (command === undefined) continue;
      for (const words of simpleCommands(command)) for (const p of checkCommand(words, shell)) out.push(`${where(block, offset + 1)}: ${p}`);
    }
    return out;
  }
  if (block.lang === 'json') {
    try {
      JSON.parse(block.code);
      return [];
    } catch (err) {
      return [`${where(block)}: not JSON: ${(err as Error).message} (a shape with placeholders is \`text\`)`];
    }
  }
  if (CONFIG.has(block.lang)) return block.code.trim() === '' ? [`${where(block)}: empty`] : [];
  if (EXCERPTS[block.lang]) return excerptProblems(block, EXCERPTS[block.lang]!);
  return [
    `${where(block)}: label the block with its language: ts, sh, json, yaml or conf to have it checked; text for output or for anything that is not code`,
  ];
}

const extracted = PAGES.map((page) => extractBlocks(readFileSync(`${ROOT}${page}`, 'utf8'), page));
const blocks = extracted.flatMap((e) => e.blocks);

// blocks planted to prove each check fails (checked in the same program as the docs'), found by their text
const PLANTED = extractBlocks(
  [
    '```ts',
    "import { openEngine } from 'sessiond';",
    "await openEngine({ fil: 'x.db' });",
    '```', // a wrong option name
    '```ts',
    "import { nothing } from 'sessiond/not-yet';",
    '```', // a door whose file does not exist
    '```ts',
    '// examples/01-embedded.ts (excerpt)',
    'const engine = await openEngine();',
    '```', // an excerpt that is not in the file
    '### `DEFAULT_LEASE_MS`',
    '',
    '```ts',
    'const DEFAULT_LEASE_MS = 20_000',
    '```', // a signature that is not the source's
    '### `Engine`',
    '',
    '```ts',
    'interface Engine { admit(): void }',
    '```', // an interface that is not the source's
    '#### `engine.awaitIdle()`',
    '',
    '```ts',
    'awaitIdle(sessionId: string): Promise<void>',
    '```', // a member block that is right
    '#### `engine.status()`',
    '',
    '```ts',
    'status(sessionId: number): Promise<void>',
    '```', // a member block that is wrong
    '### `ManualClock`',
    '',
    '```ts',
    'class ManualClock implements Clock {',
    '  set(ms: string): void;',
    '}',
    '```', // a class member that is wrong
    '## Elsewhere',
    '',
    '```ts',
    'close(): Promise<void>',
    '```', // a member block outside an export's section: only type-checked
    '```ts',
    'const x: number = "one";',
    '```', // a reference excerpt with a type error
    '<!-- prelude: declare const log: EventLog -->',
    '```ts',
    'const n: number = await log.head();',
    '```', // a prelude
    '```python',
    'print(1)',
    '```', // a python block that names no file
    '```go',
    '// clients/go/example_test.go (excerpt)',
    'c.Teleport(ctx)',
    '```', // a line that is not in the file it names
    '```',
    'no label',
    '```',
  ].join('\n'),
  'test/docs/planted.md',
).blocks;

const tsBlocks = [...blocks.filter(isTypeScript), ...PLANTED.filter(isTypeScript)];
const typecheck = typecheckBlocks(tsBlocks, ROOT, { ...DOORS, 'sessiond/not-yet': 'src/not-yet.ts' });
const tsProblems = (block: CodeBlock) => (typecheck.problems.get(block) ?? []).map((p) => `${block.file}:${p.docLine} (${block.lang}): ${p.message}`);

test('code blocks - every page is read, its fences and preludes well formed', () => {
  assert.ok(PAGES.includes('docs/api.md') && PAGES.includes('docs/testing.md'), PAGES.join(', '));
  assert.ok(blocks.length > 150, `only ${blocks.length} code blocks found`);
  const found = extracted.flatMap((e) => e.problems);
  assert.equal(found, [], found.join('\n'));
});

test('code blocks - every TypeScript block type-checks (one program)', () => {
  const found = blocks.filter(isTypeScript).flatMap(tsProblems);
  console.log(
    `  ${blocks.filter(isTypeScript).length} TypeScript blocks, ${typecheck.files} files in the program, ${typecheck.ms} ms (${typecheck.createMs} ms to create it)`,
  );
  assert.ok(found.length === 0, `${found.length} finding(s):\n${found.join('\n')}`);
});

test('code blocks - every other block is checked by its language (commands against the CLI and package.json)', () => {
  const found = blocks.filter((b) => !isTypeScript(b)).flatMap(checkOther);
  const commands = blocks
    .filter((b) => SHELL.has(b.lang) || OUTPUT.has(b.lang))
    .flatMap((b) => logicalLines(b.code))
    .flatMap((l) => simpleCommands(l.text.replace(/^\s*\$ /, '')))
    .filter((w) => w.includes('sessiond') || w[0] === 'npm');
  assert.ok(commands.length >= 30, `only ${commands.length} sessiond and npm commands found in the docs' blocks: is the extraction broken?`);
  assert.ok(found.length === 0, `${found.length} finding(s):\n${found.join('\n')}`);
});

test('code blocks - the README sets up with `npm ci && npm start` (the main job, embedded) and `npm ci && npm test` (the whole suite)', () => {
  const readme = extracted[0]!.blocks;
  const setUp = readme.find((b) => b.heading?.text === 'Set up' && SHELL.has(b.lang));
  assert.ok(setUp, 'README.md has no sh block under "## Set up"');
  const commands = logicalLines(setUp.code).map((l) => simpleCommands(l.text).map((w) => w.join(' ')));
  assert.ok(
    commands.some((c) => c.join(' && ') === 'npm ci && npm start'),
    `${where(setUp)}: no line "npm ci && npm start"`,
  );
  assert.ok(
    commands.some((c) => c.join(' && ') === 'npm ci && npm test'),
    `${where(setUp)}: no line "npm ci && npm test"`,
  );
  assert.match(pkg.scripts.start ?? '', /src\/cli\/main\.ts start$/, 'npm start does not run `sessiond start` with its defaults (embedded: no --nats)');
  assert.ok(pkg.scripts.test, 'package.json has no test script');
  assert.equal(checkSessiond(['start'], shell.program), []);
});

test('code blocks - every export of package.json is a door the TypeScript check maps', () => {
  const specs = Object.keys(pkg.exports ?? {})
    .filter((k) => !k.endsWith('.json'))
    .map((k) => (k === '.' ? 'sessiond' : `sessiond/${k.replace(/^\.\//, '')}`));
  const missing = specs.filter((s) => DOORS[s] === undefined);
  assert.equal(
    missing,
    [],
    `package.json exports ${missing.join(', ')}: add ${missing.length === 1 ? 'it' : 'them'} to DOORS in test/support/doc-typecheck.ts`,
  );
});

/** Issue numbers and stray `-->` (an editing leftover) in a page's prose (code and fenced blocks skipped). */
function proseProblems(markdown: string, page: string): string[] {
  const found: string[] = [];
  let comment = false;
  let fenced = false;
  markdown.split('\n').forEach((l, i) => {
    const fence = /^\s*(```|~~~)/.test(l);
    if (fence) fenced = !fenced;
    if (fenced || fence) return;
    const prose = l.replace(/`[^`]*`/g, '');
    // upstream references (nats-server#4320) are sources, not history
    if (/\bissues?\s+#?\d+|(?<![\w&])#\d+\b/i.test(prose.replace(/[\w.-]+#\d+/g, '')))
      found.push(`${page}:${i + 1}: an issue number: say what is, not which issue changed it`);
    for (const m of prose.matchAll(/<!--|-->/g)) {
      if (m[0] === '<!--') comment = true;
      else if (comment) comment = false;
      else found.push(`${page}:${i + 1}: a stray --> (an editing leftover)`);
    }
  });
  return found;
}

test('code blocks - user docs hold no issue numbers and no editing leftovers', () => {
  const found = PAGES.flatMap((page) => proseProblems(readFileSync(`${ROOT}${page}`, 'utf8'), page));
  assert.ok(found.length === 0, `\n${found.join('\n')}`);
  const planted = proseProblems(
    ['Fixed in issue 24.', 'See (#13).', 'nats-server#4320 and `#5` are fine', 'a tail -->', '<!-- a', 'note -->', '```text', '-->', '```'].join('\n'),
    'x.md',
  );
  assert.equal(planted, [
    'x.md:1: an issue number: say what is, not which issue changed it',
    'x.md:2: an issue number: say what is, not which issue changed it',
    'x.md:4: a stray --> (an editing leftover)',
  ]);
});

test('code blocks - each check catches what it is for', () => {
  const planted = (text: string) => {
    const b = PLANTED.find((x) => x.code.includes(text))!;
    return [...tsProblems(b), ...(isTypeScript(b) ? [] : checkOther(b))].join('\n');
  };
  assert.match(planted('fil:'), /^test\/docs\/planted\.md:3 \(ts\): TS2\d+: .*'fil'/);
  assert.match(planted('not-yet'), /imports sessiond\/not-yet, whose entry src\/not-yet\.ts does not exist yet/);
  assert.match(planted('(excerpt)'), /examples\/01-embedded\.ts, but its lines are not in that file/);
  assert.match(planted('20_000'), /const DEFAULT_LEASE_MS as documented is not what the source has/);
  assert.match(planted('admit(): void'), /type Engine as documented is not what the source has/);
  assert.is(planted('awaitIdle('), '');
  assert.match(planted('sessionId: number'), /Engine's status as documented is not what the source has/);
  assert.match(
    planted('ms: string'),
    /class ManualClock as documented is not what the source has|class ManualClock's set in the source is not what the block documents/,
  );
  assert.is(planted('close(): Promise<void>'), '');
  assert.match(planted('"one"'), /planted\.md:\d+ \(ts\): TS2322/);
  assert.is(planted('log.head()'), '');
  assert.match(planted('print(1)'), /planted\.md:\d+ \(python\): a python block starts with "# clients\/<file> \(excerpt\)"/);
  assert.match(planted('Teleport'), /planted\.md:\d+ \(go\): this line is not in clients\/go\/example_test\.go: c\.Teleport\(ctx\)/);
  assert.match(planted('no label'), /planted\.md:\d+ \(no language\): label the block/);
  const sh = (line: string) => simpleCommands(line).flatMap((w) => checkCommand(w, shell));
  assert.match(sh('npx sessiond strat')[0] ?? '', /no such command/);
  assert.match(sh('npx sessiond start --inspekt 8080')[0] ?? '', /has no option --inspekt/);
  assert.match(sh('sessiond approve ses_1')[0] ?? '', /needs <call>/);
  assert.match(sh('sessiond export')[0] ?? '', /needs --out <file>/);
  assert.match(sh('sessiond status a b')[0] ?? '', /takes \[session\], but is given "a" "b"/);
  assert.match(sh('sessiond start --db')[0] ?? '', /--db` needs a value/);
  assert.match(sh('npm run nope')[0] ?? '', /no script "nope"/);
  assert.match(sh('npm start -- --nope')[0] ?? '', /npm start runs `sessiond start`: .*no option --nope/);
  assert.match(sh('node --import tsx src/nope.ts &')[0] ?? '', /no file src\/nope\.ts/);
  assert.equal(sh('X=1 npx sessiond prompt ses_1 "two words" --db a.db 2>&1 | tee out.txt &   # a comment --nope'), []);
  assert.equal(sh('npm test -- cli && npm run chaos -- --seed 1'), []);
  assert.equal(checkOther({ file: 'x.md', line: 1, lang: 'json', code: '{"a": 1}' }), []);
  assert.match(checkOther({ file: 'x.md', line: 1, lang: 'json', code: '{ "id", … }' })[0] ?? '', /x\.md:1 \(json\): not JSON/);
  assert.match(checkOther({ file: 'x.md', line: 1, lang: 'text', code: '$ sessiond tial\nsome output' })[0] ?? '', /x\.md:2 \(text\): .*no such command/);
});

test.run();
