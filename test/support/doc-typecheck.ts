/**
 * Type-checks the `ts` blocks of the docs with the TypeScript compiler API: one program, each block a
 * virtual file beside its page (docs/api.md's block at line 120 is docs/api.md.L120.ts), with the
 * repository's compiler options and the doors of the package (`sessiond`, `sessiond/internal`, ...)
 * mapped to their source files. The rules are in docs/testing.md; in short:
 *
 * - A block that imports something is a program: it must compile as written, plus its prelude
 *   (`<!-- prelude: CODE -->` right before the fence, for what a snippet takes as given).
 * - A block that imports nothing is a reference excerpt (a signature, an interface): it sees every
 *   export of `sessiond` and `sessiond/internal` as a type; a declaration without a body is taken as
 *   `declare`d; lines before its first declaration that are members (`close(): Promise<void>`,
 *   `static open(...)`) are taken as the body of a class. Under a "### `Name`" heading of api.md, a
 *   block that declares `Name` must agree with the real export both ways (each is assignable to the
 *   other); a member block under it must agree with the real members of the same names.
 * - A block whose first line is `// examples/FILE.ts` is that file, or an excerpt of it: its lines
 *   must appear in the file in one piece, and the file is type-checked in its place (and run by
 *   test/examples.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import type { CodeBlock } from './doc-blocks.ts';
import { exportedNames } from './exported-names.ts';

/**
 * The package's doors: the specifier a doc imports, and the source file it means. A door whose file
 * does not exist yet is not mapped, and a block importing it fails naming the door. Add a row when
 * package.json gains an export (the test fails until every export of package.json has one).
 */
export const DOORS: Readonly<Record<string, string>> = {
  sessiond: 'src/index.ts',
  'sessiond/internal': 'src/internal.ts',
  'sessiond/client': 'src/client/index.ts',
  'sessiond/testing': 'src/testing/index.ts',
};

/** The doors whose exports a reference excerpt sees as types (every name a doc may show in a signature). */
const REFERENCE_DOORS = ['sessiond', 'sessiond/internal', 'sessiond/testing'];

const TS_LANGS = new Set(['ts', 'typescript', 'js']);
export const isTypeScript = (block: CodeBlock) => TS_LANGS.has(block.lang);

interface Line {
  text: string;
  docLine: number;
}

interface Virtual {
  block: CodeBlock;
  fileName: string;
  lines: Line[];
  /** Set for the drift lines: their diagnostics read as "as documented ... does not match". */
  driftFrom: number;
}

const EXAMPLE_HEADER = /^\/\/\s*(examples\/[\w.-]+\.ts)\b/;
const DECLARATION_LINE = /^(export\s+)?(declare\s+)?(type|interface|const|let|var|function|class|enum|namespace|abstract)\b/;

function parse(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

function syntaxErrors(text: string): number {
  return (parse('x.ts', text) as unknown as { parseDiagnostics: unknown[] }).parseDiagnostics.length;
}

function hasDeclare(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.DeclareKeyword);
}

/** Names a statement list declares at its top level (so the automatic imports leave them out). */
function declaredNames(sf: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const add = (n: ts.Node | undefined) => {
    if (n && ts.isIdentifier(n)) names.add(n.text);
  };
  for (const s of sf.statements) {
    if (
      ts.isFunctionDeclaration(s) ||
      ts.isClassDeclaration(s) ||
      ts.isInterfaceDeclaration(s) ||
      ts.isTypeAliasDeclaration(s) ||
      ts.isEnumDeclaration(s) ||
      ts.isModuleDeclaration(s)
    )
      add(s.name);
    else if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) add(d.name);
    else if (ts.isImportDeclaration(s) && s.importClause) {
      add(s.importClause.name);
      const b = s.importClause.namedBindings;
      if (b && ts.isNamespaceImport(b)) add(b.name);
      else if (b) for (const e of b.elements) add(e.name);
    } else if (ts.isImportEqualsDeclaration(s)) add(s.name);
  }
  return names;
}

/** The module specifiers a piece of code imports (`import ... from 'x'`, `import('x')`). */
export function importsOf(code: string): string[] {
  const sf = parse('x.ts', code);
  const out: string[] = [];
  const visit = (n: ts.Node) => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier))
      out.push(n.moduleSpecifier.text);
    if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) out.push(n.argument.literal.text);
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0]))
      out.push(n.arguments[0].text);
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

const hasImportStatement = (code: string) => parse('x.ts', code).statements.some((s) => ts.isImportDeclaration(s) || ts.isImportEqualsDeclaration(s));

export interface TypeCheckResult {
  /** Findings per block, each `what is wrong` with the doc line it is about. */
  problems: Map<CodeBlock, { docLine: number; message: string }[]>;
  /** Program creation and checking, in ms; creation alone (parsing every file the blocks reach). */
  ms: number;
  createMs: number;
  files: number;
}

export function typecheckBlocks(blocks: CodeBlock[], root: string, doors: Readonly<Record<string, string>> = DOORS): TypeCheckResult {
  const started = performance.now();
  const problems = new Map<CodeBlock, { docLine: number; message: string }[]>();
  const report = (block: CodeBlock, docLine: number, message: string) => {
    problems.set(block, [...(problems.get(block) ?? []), { docLine, message }]);
  };
  const doorFile = (spec: string) => (doors[spec] === undefined ? undefined : join(root, doors[spec]!));
  const present = Object.keys(doors).filter((spec) => existsSync(doorFile(spec)!));

  // every name a reference excerpt may use as a type, door by door (the first door that has it wins)
  const referenceNames: [string, string[]][] = [];
  const taken = new Set<string>();
  for (const spec of REFERENCE_DOORS.filter((s) => present.includes(s))) {
    const names = exportedNames(readFileSync(doorFile(spec)!, 'utf8'), doors[spec]).filter((n) => !taken.has(n));
    for (const n of names) taken.add(n);
    referenceNames.push([spec, names]);
  }

  const virtuals: Virtual[] = [];
  const examples = new Map<string, CodeBlock[]>();
  for (const block of blocks) {
    const codeLines = block.code.split('\n');
    const bodyLine = (i: number) => block.line + 1 + i;

    // an examples/ file shown whole or in part
    const header = EXAMPLE_HEADER.exec(codeLines[0] ?? '');
    if (header) {
      const path = header[1]!;
      const file = join(root, path);
      if (!existsSync(file)) {
        report(block, block.line + 1, `the block says it is ${path}, which does not exist`);
        continue;
      }
      const fileLines = readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trimEnd());
      const shown = codeLines.slice(1).map((l) => l.trimEnd());
      while (shown.length && shown.at(-1) === '') shown.pop();
      const at = fileLines.findIndex((_, i) => shown.every((l, k) => fileLines[i + k] === l));
      if (shown.length === 0 || at < 0) {
        const first = shown.findIndex((l) => !fileLines.includes(l));
        report(
          block,
          first < 0 ? block.line + 2 : bodyLine(first + 1),
          `the block says it is ${path}, but its lines are not in that file in one piece${first < 0 ? '' : ` (this one is not in it at all: ${JSON.stringify(shown[first])})`}: copy them from the file again`,
        );
        continue;
      }
      examples.set(file, [...(examples.get(file) ?? []), block]);
      continue;
    }

    // doors: each import of the package must name a door whose file exists
    let blocked = false;
    const pieces = [
      [block.code, block.line + 1],
      [block.prelude?.code ?? '', block.prelude?.line ?? 0],
      [block.pagePrelude?.code ?? '', block.pagePrelude?.line ?? 0],
    ] as const;
    for (const [code, line] of pieces) {
      for (const spec of importsOf(code)) {
        if (spec !== 'sessiond' && !spec.startsWith('sessiond/')) continue;
        if (doors[spec] === undefined) {
          report(block, line, `imports ${spec}, which is not a door of the package (DOORS in test/support/doc-typecheck.ts: ${Object.keys(doors).join(', ')})`);
          blocked = true;
        } else if (!present.includes(spec)) {
          report(block, line, `imports ${spec}, whose entry ${doors[spec]} does not exist yet: this block cannot be checked until it does`);
          blocked = true;
        }
      }
    }
    if (blocked) continue;

    const lines: Line[] = [];
    const program = hasImportStatement(block.code);
    let members: { from: number; to: number } | undefined;
    if (!program && syntaxErrors(block.code) > 0) {
      const k = codeLines.findIndex((l) => DECLARATION_LINE.test(l));
      const end = k < 0 ? codeLines.length : k;
      if (end > 0 && syntaxErrors(`declare class __Members {\n${codeLines.slice(0, end).join('\n')}\n}\n${codeLines.slice(end).join('\n')}`) === 0)
        members = { from: 0, to: end };
    }
    if (!program) {
      const own = declaredNames(
        parse('x.ts', `${block.pagePrelude?.code ?? ''}\n${block.prelude?.code ?? ''}\n${members ? codeLines.slice(members.to).join('\n') : block.code}`),
      );
      for (const [spec, names] of referenceNames) {
        const wanted = names.filter((n) => !own.has(n));
        if (wanted.length) lines.push({ text: `import type { ${wanted.join(', ')} } from '${spec}';`, docLine: block.line });
      }
    }
    if (!program && block.pagePrelude) for (const l of block.pagePrelude.code.split('\n')) lines.push({ text: l, docLine: block.pagePrelude.line });
    if (block.prelude) for (const l of block.prelude.code.split('\n')) lines.push({ text: l, docLine: block.prelude.line });
    codeLines.forEach((text, i) => {
      if (members && i === members.from) lines.push({ text: 'declare class __Members {', docLine: block.line });
      if (members && i === members.to) lines.push({ text: '}', docLine: block.line });
      lines.push({ text, docLine: bodyLine(i) });
    });
    if (members && members.to === codeLines.length) lines.push({ text: '}', docLine: block.line });
    const driftFrom = lines.length;
    const exported = referenceNames[0]?.[0] === 'sessiond' && block.section !== undefined && referenceNames[0][1].includes(block.section);
    if (!program && exported) {
      lines.push(
        ...driftLines(
          block,
          members ? codeLines.slice(members.from, members.to).join('\n') : undefined,
          members ? codeLines.slice(members.to).join('\n') : block.code,
        ),
      );
    }
    lines.push({ text: 'export {};', docLine: block.line });
    const fileName = join(root, `${block.file}.L${block.line}.ts`);
    if (!program) declareBodiless(lines, fileName, driftFrom);
    virtuals.push({ block, fileName, lines, driftFrom });
  }

  const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.config.compilerOptions, root);
  options.noEmit = true;
  options.paths = Object.fromEntries(present.map((spec) => [spec, [doorFile(spec)!]]));
  const byName = new Map(virtuals.map((v) => [v.fileName, v]));
  const host = ts.createCompilerHost(options, true);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, language, onError, shouldCreate) => {
    const v = byName.get(fileName);
    return v
      ? ts.createSourceFile(fileName, v.lines.map((l) => l.text).join('\n'), language, true, ts.ScriptKind.TS)
      : getSourceFile(fileName, language, onError, shouldCreate);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (f) => byName.has(f) || fileExists(f);
  const readFile = host.readFile.bind(host);
  host.readFile = (f) => {
    const v = byName.get(f);
    return v ? v.lines.map((l) => l.text).join('\n') : readFile(f);
  };
  const program = ts.createProgram({ rootNames: [...byName.keys(), ...examples.keys()], options, host });
  const created = performance.now();

  const diagnosticsOf = (sf: ts.SourceFile) => [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
  for (const v of virtuals) {
    const sf = program.getSourceFile(v.fileName)!;
    for (const d of diagnosticsOf(sf)) {
      const line = d.start === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line;
      const text = readable(ts.flattenDiagnosticMessageText(d.messageText, '\n  '), root);
      const docLine = v.lines[line]?.docLine ?? v.block.line;
      const drift = line >= v.driftFrom ? / {3}\/\/ (.*)$/.exec(v.lines[line]!.text)?.[1] : undefined;
      if (drift) report(v.block, docLine, `${drift}: ${text}`);
      else report(v.block, docLine, `TS${d.code}: ${text}`);
    }
  }
  for (const [file, shown] of examples) {
    const sf = program.getSourceFile(file)!;
    const rel = file.slice(root.length);
    for (const d of diagnosticsOf(sf)) {
      const line = d.start === undefined ? 0 : sf.getLineAndCharacterOfPosition(d.start).line + 1;
      for (const block of shown)
        report(block, block.line + 1, `${rel}:${line}, which the block shows: TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n  ')}`);
    }
  }
  return { problems, ms: Math.round(performance.now() - started), createMs: Math.round(created - started), files: program.getSourceFiles().length };
}

/** A diagnostic without the absolute paths of `import("...")` types: `import("/repo/src/x")` reads `src/x`. */
function readable(message: string, root: string): string {
  return message.replace(
    /import\("([^"]+)"(?:, \{ with: \{ "resolution-mode": "import" \} \})?\)\./g,
    (_, path: string) => `${path.startsWith(root) ? path.slice(root.length) : path}:`,
  );
}

/** Inserts `declare ` before each top-level function, class or variable without a body or value (the reference part only). */
function declareBodiless(lines: Line[], fileName: string, end: number): void {
  const text = lines.map((l) => l.text).join('\n');
  const sf = parse(fileName, text);
  const endPos = lines.slice(0, end).reduce((n, l) => n + l.text.length + 1, 0);
  const at: number[] = [];
  for (const s of sf.statements) {
    if (s.getStart() >= endPos || hasDeclare(s)) continue;
    if (
      (ts.isFunctionDeclaration(s) && !s.body) ||
      (ts.isClassDeclaration(s) && s.name?.text !== '__Members') ||
      (ts.isVariableStatement(s) && s.declarationList.declarations.some((d) => !d.initializer))
    )
      at.push(s.getStart());
  }
  let offset = 0;
  const starts = lines.map((l) => {
    const s = offset;
    offset += l.text.length + 1;
    return s;
  });
  for (const pos of at.reverse()) {
    let i = starts.length - 1;
    while (i > 0 && starts[i]! > pos) i--;
    const col = pos - starts[i]!;
    lines[i] = { ...lines[i]!, text: `${lines[i]!.text.slice(0, col)}declare ${lines[i]!.text.slice(col)}` };
  }
}

/**
 * For a reference excerpt in an export's section: statements that fail unless what the block declares
 * agrees with the real export. Types (interfaces, type aliases) and values (functions, consts, a
 * class's statics and constructor) are compared both ways, each assignable to the other; a value
 * under `<!-- check: abbreviated -->` only from the source to the doc (its documented type is wider).
 * A documented class is merged with the real one (`interface X extends Real {}`), so it may list only
 * some members, and each member it lists must agree with the real member both ways. Each line ends in
 * a comment the report quotes.
 */
function driftLines(block: CodeBlock, memberCode: string | undefined, declarationCode: string): Line[] {
  const name = block.section!;
  const out: Line[] = [{ text: `import type * as __real from 'sessiond';`, docLine: block.line }];
  const line = (text: string) => out.push({ text, docLine: block.line });
  const sf = parse('x.ts', declarationCode);
  let n = 0;
  const toReal = (doc: string, real: string, what: string) => {
    n++;
    line(`declare const __doc${n}: ${doc}; const __toReal${n}: ${real} = __doc${n};   // ${what} as documented is not what the source has`);
  };
  const toDoc = (doc: string, real: string, what: string) => {
    n++;
    line(`declare const __real${n}: ${real}; const __toDoc${n}: ${doc} = __real${n};   // ${what} in the source is not what the block documents`);
  };
  const both = (doc: string, real: string, what: string, abbreviated = false) => {
    if (!abbreviated) toReal(doc, real, what);
    toDoc(doc, real, what);
  };
  const keys = (xs: string[]) => xs.map((x) => `'${x}'`).join(' | ');
  const complete = (real: string, listed: string, what: string) => {
    n++;
    line(
      `const __complete${n}: [Exclude<${real}, ${listed}>] extends [never] ? true : Exclude<${real}, ${listed}> = true;   // ${what} has members the block does not list`,
    );
  };
  const isStatic = (m: ts.ClassElement) => (ts.getModifiers(m as ts.HasModifiers) ?? []).some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
  const named = (m: ts.ClassElement) => (m.name && (ts.isIdentifier(m.name) || ts.isPrivateIdentifier(m.name)) ? m.name.text : undefined);
  for (const s of sf.statements) {
    if (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) {
      if (s.name.text !== name) continue;
      const args = (s.typeParameters ?? []).filter((p) => !p.default).map((p) => (p.constraint ? p.constraint.getText(sf) : 'unknown'));
      const targs = args.length ? `<${args.join(', ')}>` : '';
      both(`${name}${targs}`, `__real.${name}${targs}`, `type ${name}`);
      if (ts.isInterfaceDeclaration(s)) complete(`keyof __real.${name}${targs}`, `keyof ${name}${targs}`, `interface ${name} in the source`);
    } else if (ts.isFunctionDeclaration(s) && s.name?.text === name) {
      both(`typeof ${name}`, `typeof __real.${name}`, `function ${name}`, block.abbreviated);
    } else if (ts.isVariableStatement(s) && s.declarationList.declarations.some((d) => ts.isIdentifier(d.name) && d.name.text === name)) {
      both(`typeof ${name}`, `typeof __real.${name}`, `const ${name}`, block.abbreviated);
    } else if (ts.isClassDeclaration(s) && s.name?.text === name) {
      line(`interface ${name} extends __real.${name} {}   // a member of class ${name} as documented is not what the source has`);
      const inst = [
        ...new Set(
          s.members
            .filter((m) => !isStatic(m) && !ts.isConstructorDeclaration(m))
            .map(named)
            .filter((x) => x !== undefined),
        ),
      ];
      const stat = [
        ...new Set(
          s.members
            .filter(isStatic)
            .map(named)
            .filter((x) => x !== undefined),
        ),
      ];
      if (inst.length) toDoc(`Pick<${name}, ${keys(inst)}>`, `Pick<__real.${name}, ${keys(inst)}>`, `class ${name}'s ${inst.join(', ')}`);
      if (stat.length) both(`Pick<typeof ${name}, ${keys(stat)}>`, `Pick<typeof __real.${name}, ${keys(stat)}>`, `${name}.${stat.join(', ')}`);
      const heritage = (s.heritageClauses ?? []).flatMap((h) => h.types.map((t) => `keyof ${t.getText(sf)}`));
      complete(`keyof __real.${name}`, [inst.length ? keys(inst) : 'never', ...heritage].join(' | '), `class ${name} in the source`);
      const base = (s.heritageClauses ?? [])
        .filter((h) => h.token === ts.SyntaxKind.ExtendsKeyword)
        .flatMap((h) => h.types.map((t) => `keyof typeof ${t.expression.getText(sf)}`));
      complete(
        `keyof typeof __real.${name}`,
        [`'prototype'`, ...(stat.length ? [keys(stat)] : []), ...base].join(' | '),
        `the static side of class ${name} in the source`,
      );
      if (s.members.some(ts.isConstructorDeclaration))
        both(`ConstructorParameters<typeof ${name}>`, `ConstructorParameters<typeof __real.${name}>`, `the constructor of ${name}`);
    }
  }
  if (memberCode !== undefined) {
    const cls = parse('x.ts', `declare class __Members {\n${memberCode}\n}`).statements[0] as ts.ClassDeclaration;
    const inst = [
      ...new Set(
        cls.members
          .filter((m) => !isStatic(m))
          .map(named)
          .filter((x) => x !== undefined),
      ),
    ];
    const stat = [
      ...new Set(
        cls.members
          .filter(isStatic)
          .map(named)
          .filter((x) => x !== undefined),
      ),
    ];
    if (inst.length) both(`Pick<__Members, ${keys(inst)}>`, `Pick<__real.${name}, ${keys(inst)}>`, `${name}'s ${inst.join(', ')}`);
    if (stat.length) both(`Pick<typeof __Members, ${keys(stat)}>`, `Pick<typeof __real.${name}, ${keys(stat)}>`, `${name}.${stat.join(', ')}`);
  }
  return out.length > 1 ? out : [];
}
