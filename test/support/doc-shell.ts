/**
 * Checks the command lines of the docs against the real `sessiond` program and package.json, without
 * running anything: `sessiond ...` and `npx sessiond ...` must name a subcommand, only options it has
 * (with their values) and its required arguments; `npm run X`, `npm test` and `npm start` must name a
 * script of package.json (and the arguments after `--` of a script that runs `src/cli/main.ts <sub>`
 * are checked as `sessiond <sub> ...`); `node`/`tsx` must be given a file that exists.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';

/** A shell line split into words (quotes removed) and simple commands (split at `&&`, `||`, `;`, `|`, `&`). */
export function simpleCommands(line: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word = '';
  let inWord = false;
  const endWord = () => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word += line.slice(i + 1, end < 0 ? line.length : end);
      inWord = true;
      i = end < 0 ? line.length : end;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length) j++;
        word += line[j];
      }
      inWord = true;
      i = j;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (c === '#' && !inWord) {
      break;
    } else if (/\s/.test(c)) {
      endWord();
    } else if (c === '>' || c === '<') {
      // a redirection (`> file`, `2>&1`, `>> log`): neither it nor its target is an argument
      if (/^\d+$/.test(word)) {
        word = '';
        inWord = false;
      } else endWord();
      if (line[i + 1] === c) i++;
      if (line[i + 1] === '&') {
        i++;
        while (i + 1 < line.length && /[\d-]/.test(line[i + 1]!)) i++;
      } else {
        while (i + 1 < line.length && /\s/.test(line[i + 1]!)) i++;
        while (i + 1 < line.length && !/[\s;|&]/.test(line[i + 1]!)) i++;
      }
    } else if (c === ';' || c === '|' || c === '&') {
      if (line[i + 1] === c) i++;
      endCommand();
    } else {
      word += c;
      inWord = true;
    }
  }
  endCommand();
  return commands;
}

/** The logical lines of a shell block: continuations (`\` at the end) joined, blank lines dropped. */
export function logicalLines(code: string): { text: string; offset: number }[] {
  const out: { text: string; offset: number }[] = [];
  const lines = code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const offset = i;
    let text = lines[i]!;
    while (/\\\s*$/.test(text) && i + 1 < lines.length) text = `${text.replace(/\\\s*$/, ' ')}${lines[++i]}`;
    if (text.trim() !== '') out.push({ text, offset });
  }
  return out;
}

const SHELL_KEYWORDS = new Set(['do', 'then', 'else', 'elif', '!', 'time', 'exec']);

export interface ShellContext {
  program: Command;
  scripts: Record<string, string>;
  root: string;
}

/** What is wrong with one simple command (empty when nothing is, or when it is not one this checks). */
export function checkCommand(words: string[], ctx: ShellContext): string[] {
  let w = [...words];
  while (w.length && (SHELL_KEYWORDS.has(w[0]!) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w[0]!))) w = w.slice(1);
  if (w.length === 0) return [];
  const [cmd, ...args] = w as [string, ...string[]];
  if (cmd === 'npx' && args[0] === 'sessiond') return checkSessiond(args.slice(1), ctx.program);
  if (cmd === 'sessiond') return checkSessiond(args, ctx.program);
  if (cmd === 'npx' && args[0] === 'tsx') return checkFileArg(args.slice(1), ctx.root, 'npx tsx');
  if (cmd === 'node' || cmd === 'tsx') return checkFileArg(args, ctx.root, cmd);
  if (cmd === 'npm') return checkNpm(args, ctx);
  return [];
}

function checkNpm(args: string[], ctx: ShellContext): string[] {
  const [verb, ...rest] = args;
  let script: string | undefined;
  let tail: string[] = [];
  if (verb === 'run' || verb === 'run-script') {
    script = rest[0];
    if (script === undefined) return ['`npm run` without a script name'];
    tail = rest.slice(1);
  } else if (verb === 'test' || verb === 't' || verb === 'start') {
    script = verb === 't' ? 'test' : verb;
    tail = rest;
  } else {
    return []; // npm ci, npm install, ...: nothing of ours to check
  }
  const body = ctx.scripts[script];
  if (body === undefined)
    return [
      `\`npm ${verb === 'run' || verb === 'run-script' ? `run ${script}` : verb}\`: package.json has no script "${script}" (it has ${Object.keys(ctx.scripts).join(', ')})`,
    ];
  const dashes = tail.indexOf('--');
  const passed = dashes < 0 ? [] : tail.slice(dashes + 1);
  const sub = /(?:^|\s)(?:tsx|node(?:\s+--import\s+tsx)?)\s+src\/cli\/main\.ts\s+([a-z-]+)/.exec(body)?.[1];
  if (sub) return checkSessiond([sub, ...passed], ctx.program).map((p) => `npm ${script} runs \`sessiond ${sub}\`: ${p}`);
  return [];
}

function checkFileArg(args: string[], root: string, what: string): string[] {
  // skip the runtime's own flags (--import tsx, --expose-gc, -e ...) to the script file
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--import' || a === '--require' || a === '-r') {
      i++;
      continue;
    }
    if (a === '-e' || a === '--eval' || a === '-p' || a === '--print') return [];
    if (a.startsWith('-')) continue;
    if (!/\.(ts|mts|js|mjs|cjs)$/.test(a)) return [];
    return existsSync(join(root, a)) ? [] : [`\`${what} ${a}\`: there is no file ${a}`];
  }
  return [];
}

const HELP = new Set(['-h', '--help']);

function takesValue(o: Option): 'required' | 'optional' | 'none' {
  return o.required ? 'required' : o.optional ? 'optional' : 'none';
}

function findOption(cmd: Command, flag: string): Option | undefined {
  return cmd.options.find((o) => o.long === flag || o.short === flag);
}

/** What is wrong with `sessiond <args>` (the words after `sessiond`), read with the real commander program. */
export function checkSessiond(args: string[], program: Command): string[] {
  const names = program.commands.map((c) => c.name());
  if (args.length === 0) return [`\`sessiond\` without a subcommand (one of ${names.join(', ')})`];
  const [first, ...rest] = args as [string, ...string[]];
  if (HELP.has(first) || first === 'help') return [];
  const cmd = program.commands.find((c) => c.name() === first || c.aliases().includes(first));
  if (!cmd) return [`\`sessiond ${first}\`: no such command (the commands are ${names.join(', ')})`];
  const name = `sessiond ${cmd.name()}`;
  const problems: string[] = [];
  const positional: string[] = [];
  const seen = new Set<Option>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === '--') {
      positional.push(...rest.slice(i + 1));
      break;
    }
    if (HELP.has(a)) return [];
    if (!a.startsWith('-') || a === '-') {
      positional.push(a);
      continue;
    }
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const flag = eq < 0 ? a : a.slice(0, eq);
    const option = findOption(cmd, flag);
    if (!option) {
      problems.push(`\`${name}\` has no option ${flag} (its options: ${cmd.options.map((o) => o.long ?? o.short).join(' ')})`);
      continue;
    }
    seen.add(option);
    const value = takesValue(option);
    if (eq >= 0) {
      if (value === 'none') problems.push(`\`${name} ${flag}\` takes no value, but is given one (${a})`);
      continue;
    }
    if (value === 'required') {
      if (i + 1 >= rest.length) problems.push(`\`${name} ${flag}\` needs a value (${option.flags})`);
      else i++;
    } else if (value === 'optional' && i + 1 < rest.length && !rest[i + 1]!.startsWith('-')) {
      i++;
    }
  }
  const expected = cmd.registeredArguments;
  const required = expected.filter((x) => x.required);
  if (positional.length < required.length) {
    const missing = required
      .slice(positional.length)
      .map((x) => `<${x.name()}>`)
      .join(' ');
    problems.push(`\`${name}\` needs ${missing} (usage: sessiond ${cmd.name()} ${cmd.usage()})`);
  }
  if (!expected.some((x) => x.variadic) && positional.length > expected.length) {
    problems.push(
      `\`${name}\` takes ${expected.length ? expected.map((x) => (x.required ? `<${x.name()}>` : `[${x.name()}]`)).join(' ') : 'no arguments'}, but is given ${positional.map((p) => JSON.stringify(p)).join(' ')}`,
    );
  }
  for (const o of cmd.options) {
    if (o.mandatory && !seen.has(o)) problems.push(`\`${name}\` needs ${o.flags}`);
  }
  return problems;
}
