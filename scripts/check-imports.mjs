#!/usr/bin/env node
// Checks the import graph of a source tree (default: src/): fails on any import circle, type-only
// imports included, on any relative import that leaves the tree (src/ must not reach into
// chaos/, test/, bench/...), and, for src/, on an import between folders that the layout table of
// docs/architecture.md ("may import") does not allow. Imports are read with TypeScript's own `ts.preProcessFile` (every
// `import`, `import type`, `export ... from` and `import()`), so no new dependency.
//
//   node scripts/check-imports.mjs [dir]
//
// Prints each circle as `a.ts -> b.ts -> a.ts` and each outside import as `a.ts imports ../x.ts`
// (paths relative to the tree), then exits 1; prints one `ok` line and exits 0 when there is none.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SOURCE = /\.(ts|tsx|mts|cts|js|mjs)$/;

/** Every source file under `dir`, absolute, sorted (declaration files and node_modules left out). */
function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    if (name === 'node_modules') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The file a relative specifier names, as the loader finds it (the `.ts` extension is written out; `.js` may stand for `.ts`). */
function resolveSpecifier(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? base;
}

/**
 * The import graph of `root`: for each file (relative to root), the files of the tree it imports,
 * and the imports that leave the tree.
 */
export function importGraph(root) {
  const abs = resolve(root);
  const graph = new Map();
  const outside = [];
  for (const file of sourceFiles(abs)) {
    const name = relative(abs, file);
    const edges = new Set();
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName: specifier } of info.importedFiles) {
      if (!specifier.startsWith('.')) continue; // a package
      const target = resolveSpecifier(file, specifier);
      const rel = relative(abs, target);
      if (rel.split(sep)[0] === '..' || isAbsolute(rel)) outside.push({ file: name, specifier });
      else edges.add(rel);
    }
    graph.set(name, [...edges].sort());
  }
  return { graph, outside };
}

/**
 * The circles of a graph, found by strongly connected components (a component of more than one
 * file, or a file that imports itself, holds circles): for each, the shortest circles that together
 * name every file of it, each as a closed path `[a, b, a]`.
 */
export function findCycles(graph) {
  // Tarjan's strongly connected components.
  let index = 0;
  const indexOf = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const components = [];
  const visit = (v) => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), indexOf.get(w)));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!indexOf.has(v)) visit(v);

  const cycles = [];
  for (const component of components) {
    const members = new Set(component);
    const sorted = [...component].sort();
    if (component.length === 1 && !(graph.get(sorted[0]) ?? []).includes(sorted[0])) continue;
    // One circle per file of the component not yet on a printed one, so every file in it is named.
    const covered = new Set();
    for (const start of sorted) {
      if (covered.has(start)) continue;
      const cycle = shortestCycle(graph, members, start);
      for (const f of cycle) covered.add(f);
      cycles.push(cycle);
    }
  }
  return cycles.sort((a, b) => a[0].localeCompare(b[0]));
}

/** The shortest circle through `start` inside one component (breadth-first), as a closed path. */
function shortestCycle(graph, members, start) {
  const previous = new Map();
  const queue = [start];
  const seen = new Set([start]);
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(previous.get(path[0]));
        return [...path, start];
      }
      if (!seen.has(w)) {
        seen.add(w);
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start]; // unreachable for a real component
}

/** Files at the top of src/ that any file may import. */
export const GROUND = ['clock.ts', 'errors.ts', 'ids.ts', 'options.ts'];
/** The name the layout table gives the other files at the top of src/ (the engine, the host, the entry points). */
export const TOP = '*.ts';

/**
 * The layout table of a markdown text: its rows whose first cell names backticked `src/<folder>`s
 * (or `src/*.ts`), each with the folders its "may import" cell names in backticks ("anything"
 * allows every folder). Returns a map from folder (`*.ts` for the top files) to a Set, or to
 * `'any'`.
 */
export function parseLayers(markdown) {
  const layers = new Map();
  let column = -1;
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('|')) {
      column = -1;
      continue;
    }
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    if (column < 0) {
      column = cells.indexOf('may import');
      continue;
    }
    if (!/^`src\/[^`/]+`(, `src\/[^`/]+`)*$/.test(cells[0] ?? '') || column >= cells.length) continue;
    const cell = cells[column];
    const allowed = /^anything\b/.test(cell) ? 'any' : new Set([...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
    for (const m of cells[0].matchAll(/`src\/([^`]+)`/g)) layers.set(m[1], allowed);
  }
  return layers;
}

/** The folder a file of src/ belongs to (its first path segment; `*.ts` for the top files). */
function folderOf(file) {
  const parts = file.split(sep);
  return parts.length === 1 ? TOP : parts[0];
}

/** The imports of `graph` between folders that `layers` does not allow, and the folders it has no row for. */
export function checkLayers(graph, layers) {
  const lines = [];
  const missing = new Set();
  for (const [file, edges] of graph) {
    const from = folderOf(file);
    if (GROUND.includes(file)) continue;
    const allowed = layers.get(from);
    if (allowed === undefined) {
      missing.add(from);
      continue;
    }
    for (const target of edges) {
      const to = folderOf(target);
      if (to === from || GROUND.includes(target) || allowed === 'any' || allowed.has(to)) continue;
      lines.push(`import across layers: ${file} imports ${target} (src/${from} may not import src/${to}; see the layout table of docs/architecture.md)`);
    }
  }
  for (const folder of [...missing].sort())
    lines.push(`no row for src/${folder} in the layout table of docs/architecture.md: add one saying what it may import`);
  return lines;
}

/** The problems of a tree, as lines to print (empty when there is none); `layers` from parseLayers. */
export function checkImports(root, layers) {
  const { graph, outside } = importGraph(root);
  const lines = [];
  for (const cycle of findCycles(graph)) lines.push(`import circle: ${cycle.join(' -> ')}`);
  for (const o of outside) lines.push(`import from outside the tree: ${o.file} imports ${o.specifier}`);
  if (layers) lines.push(...checkLayers(graph, layers));
  return { lines, files: graph.size };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const home = join(dirname(fileURLToPath(import.meta.url)), '..');
  const root = process.argv[2] ?? join(home, 'src');
  // the layers are src/'s: another tree is checked for circles and outside imports only
  const layers = process.argv[2] === undefined ? parseLayers(readFileSync(join(home, 'docs', 'architecture.md'), 'utf8')) : undefined;
  const { lines, files } = checkImports(root, layers);
  if (lines.length > 0) {
    process.stderr.write(`${lines.join('\n')}\n${lines.length} import problem${lines.length === 1 ? '' : 's'} in ${files} files\n`);
    process.exit(1);
  }
  process.stdout.write(
    `ok: ${files} files, no import circle, no import from outside the tree${layers ? ', every import between folders allowed by the layout table' : ''}\n`,
  );
}
