/**
 * The fenced code blocks of a markdown file, with where they are and what the page says about them,
 * for test/docs/code-blocks.test.ts. The conventions they follow are written at the top of
 * docs/testing.md.
 */

export interface CodeBlock {
  /** The markdown file, relative to the repository root (`README.md`, `docs/api.md`). */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The info string's first word, lower case; '' when the fence has none. */
  lang: string;
  /** The block's text, the fence's indentation removed; its first line is line `line + 1`. */
  code: string;
  /** `<!-- prelude: CODE -->` right before the fence (blank lines between allowed). */
  prelude?: { code: string; line: number };
  /** `<!-- page prelude: CODE -->` anywhere on the page: given to every block of the page that imports nothing. */
  pagePrelude?: { code: string; line: number };
  /** `<!-- check: abbreviated -->` right before the fence: the value it declares has a wider type than the source's. */
  abbreviated?: boolean;
  /** The nearest heading above the block. */
  heading?: { level: number; text: string; line: number };
  /** The export whose section holds the block: the name of the nearest "### `Name`" heading, until a heading of level 1 to 3 ends it. */
  section?: string;
}

export interface Extracted {
  blocks: CodeBlock[];
  /** Malformed markup: an unclosed fence or comment, a prelude that no code block follows. */
  problems: string[];
}

const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
/** A fence inside a list item: indented further, as markdown allows under a bullet. */
const INDENTED_FENCE = /^( {4,})(`{3,}|~{3,})(.*)$/;

export function extractBlocks(markdown: string, file: string): Extracted {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  const problems: string[] = [];
  let heading: CodeBlock['heading'];
  let section: string | undefined;
  let pendingPrelude: CodeBlock['prelude'] | undefined;
  let pendingAbbreviated = false;
  let pagePrelude: CodeBlock['pagePrelude'] | undefined;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const line = i + 1;
    if (/^\s*<!--/.test(raw)) {
      // an HTML comment, maybe over several lines; `<!-- prelude: ... -->` is the only one that matters here
      let text = raw;
      let j = i;
      while (!text.includes('-->') && j + 1 < lines.length) text += `\n${lines[++j]}`;
      if (!text.includes('-->')) {
        problems.push(`${file}:${line}: an HTML comment that never ends (no -->)`);
        break;
      }
      const m = /^\s*<!--\s*prelude:([\s\S]*?)-->\s*$/.exec(text);
      const page = /^\s*<!--\s*page prelude:([\s\S]*?)-->\s*$/.exec(text);
      if (page) {
        if (pagePrelude) problems.push(`${file}:${line}: a second page prelude (the first is at line ${pagePrelude.line}): keep one`);
        pagePrelude = { code: page[1]!.trim(), line };
      } else if (/^\s*<!--\s*check:\s*abbreviated\s*-->\s*$/.test(text)) {
        pendingAbbreviated = true;
      } else if (/^\s*<!--\s*check\b/.test(text)) {
        problems.push(`${file}:${line}: the one check directive is "<!-- check: abbreviated -->"`);
      } else if (m) {
        if (pendingPrelude) problems.push(`${file}:${pendingPrelude.line}: a prelude that no code block follows`);
        pendingPrelude = { code: m[1]!.trim(), line };
      } else if (/^\s*<!--\s*prelude\b/.test(text)) {
        problems.push(`${file}:${line}: a prelude comment must read "<!-- prelude: CODE -->", ending the line with -->`);
      }
      i = j;
      continue;
    }
    const fence = FENCE.exec(raw) ?? INDENTED_FENCE.exec(raw);
    if (fence && !(fence[2]![0] === '`' && fence[3]!.includes('`'))) {
      const indent = fence[1]!.length;
      const mark = fence[2]!;
      const lang = (fence[3]!.trim().split(/\s+/)[0] ?? '').toLowerCase();
      const body: string[] = [];
      let j = i + 1;
      let closed = false;
      for (; j < lines.length; j++) {
        const l = lines[j]!;
        const close = /^\s*(`{3,}|~{3,})\s*$/.exec(l);
        if (close && close[1]![0] === mark[0] && close[1]!.length >= mark.length) {
          closed = true;
          break;
        }
        body.push(l.slice(Math.min(indent, l.length - l.trimStart().length)));
      }
      if (!closed) {
        problems.push(`${file}:${line}: a code block that is never closed`);
        break;
      }
      blocks.push({
        file,
        line,
        lang,
        code: body.join('\n'),
        ...(pendingPrelude ? { prelude: pendingPrelude } : {}),
        ...(pendingAbbreviated ? { abbreviated: true } : {}),
        ...(heading ? { heading } : {}),
        ...(section ? { section } : {}),
      });
      pendingPrelude = undefined;
      pendingAbbreviated = false;
      i = j;
      continue;
    }
    if (raw.trim() === '') continue;
    if (pendingPrelude || pendingAbbreviated) {
      problems.push(`${file}:${pendingPrelude?.line ?? line}: a prelude or check directive must be followed by its code block (only blank lines between)`);
      pendingPrelude = undefined;
      pendingAbbreviated = false;
    }
    const h = /^(#{1,6})[ \t]+(.*?)[ \t]*$/.exec(raw);
    if (h) {
      heading = { level: h[1]!.length, text: h[2]!.replace(/[ \t]+#+$/, ''), line };
      if (heading.level <= 3) section = heading.level === 3 ? /^`([A-Za-z_$][\w$]*)`$/.exec(heading.text)?.[1] : undefined;
    }
  }
  if (pendingPrelude) problems.push(`${file}:${pendingPrelude.line}: a prelude that no code block follows`);
  if (pagePrelude) for (const b of blocks) b.pagePrelude = pagePrelude;
  return { blocks, problems };
}

/** `FILE:LINE (lang): what is wrong`, the one shape every finding is reported in. */
export function where(block: CodeBlock, offset = 0): string {
  return `${block.file}:${block.line + offset} (${block.lang || 'no language'})`;
}
