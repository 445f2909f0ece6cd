/**
 * docs/api.md is the per-call reference of the public API: the doors of package.json's exports,
 * `sessiond` (src/index.ts), `sessiond/client` (src/client/index.ts), `sessiond/testing`
 * (src/testing/index.ts) and `sessiond/internal` (src/internal.ts). They cannot drift: every name
 * src/index.ts or src/testing/index.ts exports (values and types, read with the TypeScript compiler
 * API) has exactly one section in docs/api.md, every section names a current export, every section
 * has a ```ts block (its signature), and every link to an anchor of docs/api.md (from itself, from
 * README.md or from the other pages of docs/) names one of its headings. Each door's export list is
 * there too ("Entry points"): the Contents lists `sessiond`'s names and, as its last group,
 * `sessiond/testing`'s; the `sessiond/client` and `sessiond/internal` doors each have an "Exports:"
 * paragraph naming exactly what their file exports (the client's names are all `sessiond`'s).
 *
 * The heading convention (stated at the top of docs/api.md for maintainers): an export's section
 * starts with a line "### `Name`" (three hashes, a space, the name in backticks, nothing else) and
 * runs to the next heading of level 1 to 3. Groups are "## Title" without backticks; members are
 * level-4 headings inside a section. A level-2 or level-3 heading that starts with a backtick and is
 * not exactly "### `Name`" is refused, so a malformed heading cannot silently go unchecked.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exportedNames } from '../support/exported-names.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INDEX_FILE = `${ROOT}src/index.ts`;
const CLIENT_FILE = `${ROOT}src/client/index.ts`;
const TESTING_FILE = `${ROOT}src/testing/index.ts`;
const INTERNAL_FILE = `${ROOT}src/internal.ts`;
/** The doors of package.json's exports, as imported (`sessiond`, `sessiond/client`, ...). */
const DOORS = Object.keys((JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { exports: Record<string, unknown> }).exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? 'sessiond' : `sessiond/${k.slice(2)}`));
/** The anchor of the last group of the Contents, the `sessiond/testing` door's. */
const TESTING_GROUP = 'testing-sessiondtesting';
const DOC_FILE = `${ROOT}docs/api.md`;
const README_FILE = `${ROOT}README.md`;
const DOCS_DIR = `${ROOT}docs/`;

const EXPORT_HEADING = /^`([A-Za-z_$][\w$]*)`$/;

interface Heading {
  level: number;
  text: string;
  line: number;
  slug: string;
}
interface Section {
  name: string;
  line: number;
  body: string[];
}
interface Doc {
  headings: Heading[];
  sections: Section[];
  links: { anchor: string; line: number }[];
}

/** GitHub's heading anchors (github-slugger): lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function slugger(): (text: string) => string {
  const seen = new Map<string, number>();
  return (text) => {
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base);
    seen.set(base, (n ?? 0) + 1);
    return n === undefined ? base : `${base}-${n}`;
  };
}

/** The headings, export sections and in-page links of a markdown file (code fences and HTML comments skipped). */
function parseDoc(markdown: string): Doc {
  const lines = markdown.split('\n');
  const slug = slugger();
  const headings: Heading[] = [];
  const sections: Section[] = [];
  const links: Doc['links'] = [];
  let fence: string | undefined;
  let comment = false;
  let current: Section | undefined;
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (comment) {
      if (raw.includes('-->')) comment = false;
      return;
    }
    const fenceMark = /^ {0,3}(`{3,}|~{3,})/.exec(raw)?.[1];
    if (fence !== undefined) {
      if (fenceMark && fenceMark[0] === fence[0] && fenceMark.length >= fence.length && raw.trim() === fenceMark) fence = undefined;
      current?.body.push(raw);
      return;
    }
    if (fenceMark) {
      fence = fenceMark;
      current?.body.push(raw);
      return;
    }
    if (/^\s*<!--/.test(raw) && !raw.includes('-->')) {
      comment = true;
      return;
    }
    const h = /^(#{1,6})[ \t]+(.*?)[ \t]*$/.exec(raw);
    if (h) {
      const level = h[1]!.length;
      const text = h[2]!.replace(/[ \t]+#+$/, '');
      headings.push({ level, text, line, slug: slug(text) });
      if (level <= 3) current = undefined;
      const name = level === 3 ? EXPORT_HEADING.exec(text)?.[1] : undefined;
      if (name) sections.push((current = { name, line, body: [] }));
      return;
    }
    for (const m of raw.replace(/`[^`]*`/g, '').matchAll(/\]\(#([^)\s]+)\)/g)) links.push({ anchor: m[1]!, line });
    current?.body.push(raw);
  });
  return { headings, sections, links };
}

/** The sources of the doors other than `sessiond` (src/index.ts), which a drift test may replace. */
interface OtherDoors {
  client: string;
  testing: string;
  internal: string;
}

/**
 * What is wrong between the doors' exports and docs/api.md (empty: they agree): the per-export
 * sections (src/index.ts's and src/testing/index.ts's), the Contents (the `sessiond` door's list and,
 * as its last group, the `sessiond/testing` door's), and the "Exports:" paragraphs of the
 * `sessiond/client` and `sessiond/internal` doors.
 */
function problems(indexSource: string, markdown: string, others: OtherDoors = otherDoors): string[] {
  const exports = exportedNames(indexSource);
  const testingExports = exportedNames(others.testing, 'testing/index.ts');
  const exportSet = new Set(exports);
  const documented = new Set([...exports, ...testingExports]);
  const doc = parseDoc(markdown);
  const out: string[] = [];
  const byName = new Map<string, Section[]>();
  for (const s of doc.sections) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
  for (const name of new Set(exports)) {
    if (!byName.has(name))
      out.push(`src/index.ts exports ${name}, but docs/api.md has no "### \`${name}\`" section: document it in the group src/index.ts puts it in`);
  }
  for (const name of new Set(testingExports)) {
    if (exportSet.has(name)) out.push(`src/testing/index.ts exports ${name}, which src/index.ts exports too: one name, one section; rename one of them`);
    else if (!byName.has(name))
      out.push(`src/testing/index.ts exports ${name}, but docs/api.md has no "### \`${name}\`" section: document it under "Testing: sessiond/testing"`);
  }
  for (const [name, sections] of byName) {
    if (sections.length > 1)
      out.push(`docs/api.md has ${sections.length} "### \`${name}\`" sections (lines ${sections.map((s) => s.line).join(', ')}): keep one`);
    const exported = documented.has(name);
    if (!exported) {
      out.push(
        `docs/api.md line ${sections[0]!.line} documents ${name}, which neither src/index.ts nor src/testing/index.ts exports: remove the section, or export the name`,
      );
    }
    for (const s of sections) {
      if (exported && !s.body.some((l) => /^ {0,3}```(ts|typescript)\s*$/.test(l))) {
        out.push(`docs/api.md line ${s.line}: the section of ${name} has no \`\`\`ts block: give its signature`);
      }
    }
  }
  for (const h of doc.headings) {
    if ((h.level === 2 || h.level === 3) && h.text.startsWith('`') && !(h.level === 3 && EXPORT_HEADING.test(h.text))) {
      out.push(
        `docs/api.md line ${h.line}: heading "${'#'.repeat(h.level)} ${h.text}" is not an export heading; use exactly "### \`Name\`", or a level-4 heading for a member`,
      );
    }
  }
  const anchors = new Set(doc.headings.map((h) => h.slug));
  for (const link of doc.links) {
    if (!anchors.has(link.anchor)) out.push(`docs/api.md line ${link.line}: link to #${link.anchor}, which no heading of docs/api.md has`);
  }
  out.push(
    ...doorProblems(markdown, doc, {
      index: exports,
      testing: testingExports,
      client: exportedNames(others.client, 'client.ts'),
      internal: exportedNames(others.internal, 'internal.ts'),
    }),
  );
  return out;
}

/** The lines under the heading at `heading` (1-based line), down to the next heading of level `level` or above. */
function sectionLines(markdown: string, doc: Doc, heading: Heading): { text: string; line: number }[] {
  const lines = markdown.split('\n');
  const next = doc.headings.find((h) => h.line > heading.line && h.level <= heading.level);
  return lines.slice(heading.line, next ? next.line - 1 : lines.length).map((text, i) => ({ text, line: heading.line + 1 + i }));
}

/** Names, in backticks, a list of exports spells: `Name` or [`Name`](#anchor); members (`close()`) are not names. */
function namesIn(text: string): string[] {
  return [...text.matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((m) => m[1]!);
}

/** `names` against what `file` exports, as problems of `where`. */
function compareList(names: string[], exported: string[], where: string, file: string): string[] {
  const out: string[] = [];
  const have = new Set(names);
  const want = new Set(exported);
  for (const n of want) if (!have.has(n)) out.push(`${file} exports ${n}, but ${where} does not name it: add it there`);
  for (const n of have) if (!want.has(n)) out.push(`${where} names ${n}, which ${file} does not export: remove it there, or export it`);
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) out.push(`${where} names ${n} twice`);
    seen.add(n);
  }
  return out;
}

/**
 * The door lists: one "### Door: <import>" heading per door of package.json's exports; the
 * `sessiond/client` and `sessiond/internal` doors' "Exports:" paragraphs name exactly what their file
 * exports (and the client's names are `sessiond`'s, so their sections are the ones above); the
 * Contents' groups but the last name exactly src/index.ts's exports, its last group
 * ("Testing: sessiond/testing") exactly src/testing/index.ts's.
 */
function doorProblems(markdown: string, doc: Doc, exports: { index: string[]; testing: string[]; client: string[]; internal: string[] }): string[] {
  const out: string[] = [];
  const doorHeadings = doc.headings.filter((h) => h.level === 3 && h.text.startsWith('Door: '));
  const named = doorHeadings.map((h) => h.text.slice('Door: '.length));
  for (const door of DOORS)
    if (!named.includes(door)) out.push(`docs/api.md has no "### Door: ${door}" heading under "Entry points" (package.json exports ${door})`);
  for (const door of named) {
    if (!DOORS.includes(door)) out.push(`docs/api.md has a "### Door: ${door}" heading, but package.json has no such door`);
    if (named.filter((d) => d === door).length > 1) out.push(`docs/api.md has more than one "### Door: ${door}" heading`);
  }
  const listed: [string, string[], string][] = [
    ['sessiond/client', exports.client, 'src/client/index.ts'],
    ['sessiond/internal', exports.internal, 'src/internal.ts'],
  ];
  for (const [door, exported, file] of listed) {
    const heading = doorHeadings.find((h) => h.text === `Door: ${door}`);
    if (!heading) continue;
    const lines = sectionLines(markdown, doc, heading);
    const first = lines.findIndex((l) => l.text.startsWith('Exports:'));
    if (first < 0) {
      out.push(`docs/api.md line ${heading.line}: the ${door} door has no paragraph starting "Exports:" naming what ${file} exports`);
      continue;
    }
    const blank = lines.findIndex((l, i) => i > first && l.text.trim() === '');
    const paragraph = lines
      .slice(first, blank < 0 ? undefined : blank)
      .map((l) => l.text)
      .join(' ');
    out.push(...compareList(namesIn(paragraph), exported, `the "Exports:" paragraph of the ${door} door (docs/api.md line ${lines[first]!.line})`, file));
  }
  const index = new Set(exports.index);
  for (const n of exports.client)
    if (!index.has(n))
      out.push(`src/client/index.ts exports ${n}, which src/index.ts does not: sessiond/client names only what sessiond exports (and docs/api.md documents)`);

  const contents = doc.headings.find((h) => h.level === 2 && h.text === 'Contents');
  if (!contents) return [...out, 'docs/api.md has no "## Contents"'];
  const bullets: { anchor: string; line: number; text: string }[] = [];
  for (const l of sectionLines(markdown, doc, contents)) {
    const m = /^- \[[^\]]*\]\(#([^)]+)\)(.*)$/.exec(l.text);
    if (m) bullets.push({ anchor: m[1]!, line: l.line, text: m[2]! });
    else if (/^\s+\S/.test(l.text) && bullets.length > 0) bullets[bullets.length - 1]!.text += ` ${l.text}`;
  }
  const last = bullets[bullets.length - 1];
  if (!last || last.anchor !== TESTING_GROUP)
    return [...out, `the last group of docs/api.md's Contents is not "Testing: sessiond/testing" (#${TESTING_GROUP})`];
  out.push(
    ...compareList(
      bullets.slice(0, -1).flatMap((b) => namesIn(b.text)),
      exports.index,
      "docs/api.md's Contents (the sessiond door's groups)",
      'src/index.ts',
    ),
  );
  out.push(...compareList(namesIn(last.text), exports.testing, `the Testing group of docs/api.md's Contents (line ${last.line})`, 'src/testing/index.ts'));
  return out;
}

/**
 * Links from another markdown file into docs/api.md whose anchor is not one of its headings. From the
 * repository root the link reads `docs/api.md#x`; from a page in docs/ it reads `api.md#x`.
 */
function brokenLinksInto(markdown: string, from: string, doc: Doc, inDocs = false): string[] {
  const anchors = new Set(doc.headings.map((h) => h.slug));
  const out: string[] = [];
  const link = inDocs ? /\]\((?:\.\/)?api\.md#([^)\s]+)\)/g : /\]\((?:\.\/)?docs\/api\.md#([^)\s]+)\)/g;
  markdown.split('\n').forEach((raw, i) => {
    for (const m of raw.matchAll(link)) {
      if (!anchors.has(m[1]!)) out.push(`${from} line ${i + 1}: link to docs/api.md#${m[1]}, which no heading of docs/api.md has`);
    }
  });
  return out;
}

const indexSource = readFileSync(INDEX_FILE, 'utf8');
const otherDoors: OtherDoors = {
  client: readFileSync(CLIENT_FILE, 'utf8'),
  testing: readFileSync(TESTING_FILE, 'utf8'),
  internal: readFileSync(INTERNAL_FILE, 'utf8'),
};
const markdown = readFileSync(DOC_FILE, 'utf8');

test('api reference - src/index.ts is read whole: values, inline `type` exports and `export type { ... }`', () => {
  const names = exportedNames(indexSource);
  assert.ok(names.length >= 40, `only ${names.length} exports found in src/index.ts`);
  for (const name of ['startSessiond', 'Sessiond', 'openEngine', 'AdmitRequest', 'RunContext', 'SessiondClient', 'IdSource']) {
    assert.ok(names.includes(name), `${name} not found among the exports of src/index.ts`);
  }
});

test('api reference - every export of src/index.ts has one section in docs/api.md with its signature, and every section names an export', () => {
  const found = problems(indexSource, markdown);
  assert.equal(found, [], `docs/api.md and src/index.ts disagree:\n${found.join('\n')}`);
});

test('api reference - links from README.md into docs/api.md name its headings', () => {
  const found = brokenLinksInto(readFileSync(README_FILE, 'utf8'), 'README.md', parseDoc(markdown));
  assert.equal(found, [], found.join('\n'));
});

test('api reference - links from the other pages of docs/ into api.md name its headings', () => {
  const pages = readdirSync(DOCS_DIR).filter((f) => f.endsWith('.md') && f !== 'api.md');
  assert.ok(pages.includes('api-guide.md'), `docs/api-guide.md not found among ${pages.join(', ')}`);
  const doc = parseDoc(markdown);
  const found = pages.flatMap((f) => brokenLinksInto(readFileSync(`${DOCS_DIR}${f}`, 'utf8'), `docs/${f}`, doc, true));
  assert.equal(found, [], found.join('\n'));
  assert.ok(brokenLinksInto('[x](api.md#no-such-heading)', 'docs/x.md', doc, true).length === 1, 'a broken link from docs/ went unnoticed');
});

test('api reference - the check catches drift both ways (an undocumented export, a stale section, an empty one)', () => {
  const added = `${indexSource}\nexport { dummyExport } from './dummy.ts';\nexport type { DummyType, Inner as Renamed } from './dummy.ts';\nexport const inlineExport = 1;\n`;
  const found = problems(added, markdown);
  for (const name of ['dummyExport', 'DummyType', 'Renamed', 'inlineExport']) {
    assert.ok(
      found.some((p) => p.startsWith(`src/index.ts exports ${name},`)),
      `an undocumented ${name} went unnoticed:\n${found.join('\n')}`,
    );
  }
  assert.ok(
    problems(indexSource, `${markdown}\n### \`retiredExport\`\n\n\`\`\`ts\nconst retiredExport: 1\n\`\`\`\n`).some((p) =>
      p.includes('documents retiredExport, which neither src/index.ts nor src/testing/index.ts exports'),
    ),
  );
  assert.ok(
    problems(indexSource, markdown.replace(/^### `startSessiond`$/m, '### startSessiond')).some((p) => p.startsWith('src/index.ts exports startSessiond,')),
  );
  assert.ok(problems(indexSource, markdown.replace(/^### `Sessiond`$/m, '### `Sessiond` (interface)')).some((p) => p.includes('is not an export heading')));
  const emptied = `${indexSource}\nexport { emptyOne } from './x.ts';\n`;
  assert.ok(problems(emptied, `${markdown}\n### \`emptyOne\`\n\nNo signature yet.\n`).some((p) => p.includes('the section of emptyOne has no ```ts block')));
  assert.ok(problems(indexSource, `${markdown}\nSee [nowhere](#no-such-heading).\n`).some((p) => p.includes('#no-such-heading')));
  assert.throws(() => exportedNames(`${indexSource}\nexport * from './x.ts';\n`), /export \* from/);
});

test('api reference - each door of package.json has its heading, and its list names exactly what its file exports', () => {
  assert.equal(DOORS, ['sessiond', 'sessiond/client', 'sessiond/testing', 'sessiond/internal']);
  const doc = parseDoc(markdown);
  for (const door of DOORS)
    assert.ok(
      doc.headings.some((h) => h.level === 3 && h.text === `Door: ${door}`),
      `no "### Door: ${door}"`,
    );
  const testing = exportedNames(otherDoors.testing, 'testing/index.ts');
  for (const name of [
    'eventLogContract',
    'snapshotStoreContract',
    'blobStoreContract',
    'startFakeOpenAI',
    'startNatsServer',
    'startNatsCluster',
    'waitFor',
    'ev',
  ]) {
    assert.ok(testing.includes(name), `${name} not found among the exports of src/testing/index.ts`);
  }
  const client = exportedNames(otherDoors.client, 'client.ts');
  for (const name of ['SessiondClient', 'CommandError', 'subjects', 'connectNats', 'SessiondError', 'LiveMessage']) {
    assert.ok(client.includes(name), `${name} not found among the exports of src/client/index.ts`);
  }
});

test('api reference - the door checks catch drift: a door export unlisted or stale, a Contents name missing, a testing export undocumented, a door heading gone', () => {
  const withClient = { ...otherDoors, client: `${otherDoors.client}\nexport { echoRunner } from './runner/echo.ts';\n` };
  assert.ok(
    problems(indexSource, markdown, withClient).some((p) =>
      p.startsWith('src/client/index.ts exports echoRunner, but the "Exports:" paragraph of the sessiond/client door'),
    ),
  );
  const withInternal = { ...otherDoors, internal: `${otherDoors.internal}\nexport { newSeam } from './x.ts';\n` };
  assert.ok(
    problems(indexSource, markdown, withInternal).some((p) =>
      p.startsWith('src/internal.ts exports newSeam, but the "Exports:" paragraph of the sessiond/internal door'),
    ),
  );
  assert.ok(
    problems(indexSource, markdown.replace('`BLOB_BUCKET`.', '`BLOB_BUCKET`, `goneSeam`.')).some((p) =>
      p.includes('names goneSeam, which src/internal.ts does not export'),
    ),
  );
  const clientOnly = { ...otherDoors, client: `${otherDoors.client}\nexport { clientOnly } from './x.ts';\n` };
  assert.ok(problems(indexSource, markdown, clientOnly).some((p) => p.startsWith('src/client/index.ts exports clientOnly, which src/index.ts does not')));
  assert.ok(
    problems(indexSource, markdown.replace('[`SessionView`](#sessionview), ', '')).some((p) =>
      p.startsWith("src/index.ts exports SessionView, but docs/api.md's Contents"),
    ),
  );
  assert.ok(
    problems(indexSource, markdown.replace('[`waitFor`](#waitfor)\n', '\n')).some((p) =>
      p.startsWith('src/testing/index.ts exports waitFor, but the Testing group'),
    ),
  );
  const withTesting = { ...otherDoors, testing: `${otherDoors.testing}\nexport { newHelper } from './x.ts';\n` };
  const found = problems(indexSource, markdown, withTesting);
  assert.ok(
    found.some((p) => p.startsWith('src/testing/index.ts exports newHelper, but docs/api.md has no "### `newHelper`" section')),
    found.join('\n'),
  );
  assert.ok(
    problems(indexSource, markdown.replace('### Door: sessiond/client\n', '### The client door\n')).some((p) =>
      p.includes('no "### Door: sessiond/client" heading'),
    ),
  );
  const clash = { ...otherDoors, testing: `${otherDoors.testing}\nexport { openEngine } from '../engine.ts';\n` };
  assert.ok(problems(indexSource, markdown, clash).some((p) => p.includes('src/testing/index.ts exports openEngine, which src/index.ts exports too')));
});

test.run();
