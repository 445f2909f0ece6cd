#!/usr/bin/env node
// Checks the import graph of a source tree (default: src/): fails on any import circle, type-only
// imports included, and on any relative import that leaves the tree (src/ must not reach into
// chaos/, test/, bench/...). Imports are read with TypeScript's own `ts.preProcessFile` (every
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

/** The problems of a tree, as lines to print (empty when there is none). */
export function checkImports(root) {
  const { graph, outside } = importGraph(root);
  const lines = [];
  for (const cycle of findCycles(graph)) lines.push(`import circle: ${cycle.join(' -> ')}`);
  for (const o of outside) lines.push(`import from outside the tree: ${o.file} imports ${o.specifier}`);
  return { lines, files: graph.size };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const { lines, files } = checkImports(root);
  if (lines.length > 0) {
    process.stderr.write(`${lines.join('\n')}\n${lines.length} import problem${lines.length === 1 ? '' : 's'} in ${files} files\n`);
    process.exit(1);
  }
  process.stdout.write(`ok: ${files} files, no import circle, no import from outside the tree\n`);
}
