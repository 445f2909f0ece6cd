/**
 * docs/api.md is the per-call reference of the public API, src/index.ts. The two cannot drift:
 * every name src/index.ts exports (values and types, read with the TypeScript compiler API) has
 * exactly one section in docs/api.md, every section names a current export, every section has a
 * ```ts block (its signature), and every link to an anchor of docs/api.md (from itself, from
 * README.md or from the other pages of docs/) names one of its headings.
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
const DOC_FILE = `${ROOT}docs/api.md`;
const README_FILE = `${ROOT}README.md`;
const DOCS_DIR = `${ROOT}docs/`;

const EXPORT_HEADING = /^`([A-Za-z_$][\w$]*)`$/;

interface Heading { level: number; text: string; line: number; slug: string }
interface Section { name: string; line: number; body: string[] }
interface Doc { headings: Heading[]; sections: Section[]; links: { anchor: string; line: number }[] }

/** GitHub's heading anchors (github-slugger): lower case, punctuation but `-` and `_` dropped, spaces to `-`, repeats numbered. */
function slugger(): (text: string) => string {
  const seen = new Map<string, number>();
  return (text) => {
    const base = text.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
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

/** What is wrong between src/index.ts's exports and docs/api.md's sections (empty: they agree). */
function problems(indexSource: string, markdown: string): string[] {
  const exports = exportedNames(indexSource);
  const exportSet = new Set(exports);
  const doc = parseDoc(markdown);
  const out: string[] = [];
  const byName = new Map<string, Section[]>();
  for (const s of doc.sections) byName.set(s.name, [...(byName.get(s.name) ?? []), s]);
  for (const name of new Set(exports)) {
    if (!byName.has(name)) out.push(`src/index.ts exports ${name}, but docs/api.md has no "### \`${name}\`" section: document it in the group src/index.ts puts it in`);
  }
  for (const [name, sections] of byName) {
    if (sections.length > 1) out.push(`docs/api.md has ${sections.length} "### \`${name}\`" sections (lines ${sections.map((s) => s.line).join(', ')}): keep one`);
    const exported = exportSet.has(name);
    if (!exported) {
      out.push(`docs/api.md line ${sections[0]!.line} documents ${name}, which src/index.ts does not export: remove the section, or export the name`);
    }
    for (const s of sections) {
      if (exported && !s.body.some((l) => /^ {0,3}```(ts|typescript)\s*$/.test(l))) {
        out.push(`docs/api.md line ${s.line}: the section of ${name} has no \`\`\`ts block: give its signature`);
      }
    }
  }
  for (const h of doc.headings) {
    if ((h.level === 2 || h.level === 3) && h.text.startsWith('`') && !(h.level === 3 && EXPORT_HEADING.test(h.text))) {
      out.push(`docs/api.md line ${h.line}: heading "${'#'.repeat(h.level)} ${h.text}" is not an export heading; use exactly "### \`Name\`", or a level-4 heading for a member`);
    }
  }
  const anchors = new Set(doc.headings.map((h) => h.slug));
  for (const link of doc.links) {
    if (!anchors.has(link.anchor)) out.push(`docs/api.md line ${link.line}: link to #${link.anchor}, which no heading of docs/api.md has`);
  }
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
    assert.ok(found.some((p) => p.startsWith(`src/index.ts exports ${name},`)), `an undocumented ${name} went unnoticed:\n${found.join('\n')}`);
  }
  assert.ok(problems(indexSource, `${markdown}\n### \`retiredExport\`\n\n\`\`\`ts\nconst retiredExport: 1\n\`\`\`\n`).some((p) => p.includes('documents retiredExport, which src/index.ts does not export')));
  assert.ok(problems(indexSource, markdown.replace(/^### `startSessiond`$/m, '### startSessiond')).some((p) => p.startsWith('src/index.ts exports startSessiond,')));
  assert.ok(problems(indexSource, markdown.replace(/^### `Sessiond`$/m, '### `Sessiond` (interface)')).some((p) => p.includes('is not an export heading')));
  const emptied = `${indexSource}\nexport { emptyOne } from './x.ts';\n`;
  assert.ok(problems(emptied, `${markdown}\n### \`emptyOne\`\n\nNo signature yet.\n`).some((p) => p.includes('the section of emptyOne has no ```ts block')));
  assert.ok(problems(indexSource, `${markdown}\nSee [nowhere](#no-such-heading).\n`).some((p) => p.includes('#no-such-heading')));
  assert.throws(() => exportedNames(`${indexSource}\nexport * from './x.ts';\n`), /export \* from/);
});

test.run();
