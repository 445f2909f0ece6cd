/**
 * The Python client's per-event types (clients/python/src/sessiond_client/generated.py), rendered
 * from the model scripts/protocol-types.ts reads from the protocol schema: a frozen dataclass per
 * payload and nested shape, the rules its reader checks a payload with (the checkers are
 * _schema.py's), the CATALOG, and one Event subclass per type with EVENT_CLASSES.
 */
import type { Field, Model, Shape, Struct } from './protocol-types.ts';
import { words } from './protocol-types.ts';

export const PYTHON_FILE = 'clients/python/src/sessiond_client/generated.py';

/** Python class names where the event's own name is taken (ExecutionPhase is the phase's Literal). */
const classNames: Record<string, string> = { ExecutionPhase: 'ExecutionPhaseChanged' };
/** Names of enums, by their sorted values. */
const enumNames: Record<string, string> = {
  'queue,steer': 'Delivery',
  'safe,unknown': 'ExecutionPhase',
  'failed,released,succeeded,waiting': 'SettleOutcome',
  'approval,session,signal,timer': 'WaitKind',
  'approved,cancelled,delivered,denied,elapsed,timed_out': 'WaitOutcome',
  'approved,awaiting_approval,called,cancelled,denied,failed,running,succeeded': 'ToolState',
};
const keywords = new Set(['from', 'import', 'class', 'def', 'global', 'lambda', 'pass', 'return', 'in', 'is', 'not', 'and', 'or']);

const className = (name: string) => classNames[name] ?? name;
export const pyName = (key: string) => {
  const snake = words(key)
    .map((w) => w.toLowerCase())
    .join('_');
  return keywords.has(snake) ? `${snake}_` : snake;
};
const rulesName = (name: string) =>
  `${className(name)
    .replace(/(?<=[a-z])(?=[A-Z])/g, '_')
    .toUpperCase()}_RULES`;
const str = (s: string) => JSON.stringify(s);
const literal = (values: string[]) => `Literal[${values.map(str).join(', ')}]`;
const enumType = (values: string[]) => enumNames[[...values].sort().join(',')] ?? literal(values);

function pyType(s: Shape): string {
  switch (s.kind) {
    case 'string':
    case 'const':
      return 'str';
    case 'enum':
      return enumType(s.values);
    case 'int':
      return 'int';
    case 'number':
      return 'float';
    case 'bool':
      return 'bool';
    case 'any':
      return 'Any';
    case 'array':
      return `list[${pyType(s.items)}]`;
    case 'nullable':
      return `${pyType(s.inner)} | None`;
    case 'tags':
      return s.nullValues ? 'dict[str, str | None]' : 'dict[str, str]';
    case 'struct':
      return className(s.name);
    case 'union':
      return s.name;
    case 'prompt':
      return 'Prompt';
    case 'promptPart':
      return 'PromptPart';
  }
}

function rule(s: Shape): string {
  switch (s.kind) {
    case 'string':
      if (s.pattern !== undefined) return `Pattern(${str(s.pattern)})`;
      if (s.maxLength !== undefined) return `Str(${s.minLength ?? 0}, ${s.maxLength})`;
      return s.minLength ? `Str(${s.minLength})` : 'Str()';
    case 'const':
      return `Const(${str(s.value)})`;
    case 'enum':
      return `Enum((${s.values.map(str).join(', ')}))`;
    case 'int':
      return s.min === undefined ? 'Int()' : s.exclusive ? `Int(${s.min}, exclusive_min=True)` : `Int(${s.min})`;
    case 'number':
      return s.min === undefined ? 'Num()' : `Num(${s.min})`;
    case 'bool':
      return 'Bool()';
    case 'any':
      return 'AnyValue()';
    case 'array':
      return s.minItems ? `Array(${rule(s.items)}, ${s.minItems})` : `Array(${rule(s.items)})`;
    case 'nullable':
      return `Nullable(${rule(s.inner)})`;
    case 'tags':
      return s.nullValues ? 'Record(Nullable(TAG_VALUE))' : 'Record(TAG_VALUE)';
    case 'struct':
      return rulesName(s.name);
    case 'union':
      return `${s.name.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toUpperCase()}_RULES`;
    case 'prompt':
      return 'PROMPT';
    case 'promptPart':
      return 'PROMPT_PART';
  }
}

/** `text` as lines of at most `width` characters, each after `indent`. */
export function wrap(text: string, indent: string, width = 110): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && `${indent}${line} ${word}`.length > width) {
      out.push(`${indent}${line}`);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(`${indent}${line}`);
  return out;
}

export function docstring(doc: string, indent: string): string {
  const text = doc.replaceAll('`', '``');
  const lines = wrap(`"""${text}"""`, indent);
  return lines.join('\n');
}

function renderClass(s: Struct): string {
  const fieldLine = (f: Field) => {
    const type = pyType(f.shape);
    if (f.default !== undefined) return `    ${pyName(f.key)}: ${type} = ${str(f.default)}`;
    if (!f.optional) return `    ${pyName(f.key)}: ${type}`;
    if (f.shape.kind === 'any') return `    ${pyName(f.key)}: Any = ABSENT`;
    return `    ${pyName(f.key)}: ${type} | None = None`;
  };
  // a dataclass's fields with defaults follow those without (it is built by keyword, so the wire's order need not hold)
  const plain = s.fields.filter((f) => !f.optional && f.default === undefined);
  const defaulted = s.fields.filter((f) => f.optional || f.default !== undefined);
  const body = [
    docstring(s.doc, '    '),
    '',
    ...(s.tag === undefined ? [] : [`    type: ClassVar[Literal[${str(s.tag)}]] = ${str(s.tag)}`]),
    ...[...plain, ...defaulted].map(fieldLine),
  ];
  return `@dataclass(frozen=True)\nclass ${className(s.name)}:\n${body.join('\n')}\n`;
}

function renderRules(s: Struct): string {
  const fields = [
    ...(s.tag === undefined ? [] : [`F("type", "", Const(${str(s.tag)}))`]),
    ...s.fields.map((f) => {
      const extra = [...(f.optional ? ['optional=True'] : []), ...(f.default === undefined ? [] : [`default=${str(f.default)}`])];
      return `F(${[str(f.key), str(pyName(f.key)), rule(f.shape), ...extra].join(', ')})`;
    }),
  ];
  // as ruff formats it: a tuple of one on one line, of more one per line
  const tuple = fields.length === 1 ? `    (${fields[0]},),` : `    (\n${fields.map((f) => `        ${f},`).join('\n')}\n    ),`;
  return `${rulesName(s.name)} = Obj(\n${tuple}\n    ${className(s.name)},\n)`;
}

export function renderPython(model: Model): string {
  const exported: string[] = [];
  const out: string[] = [
    '# Code generated by scripts/protocol.ts; DO NOT EDIT.',
    '"""The payload of every event type of clients/protocol/schema/events.schema.json, at its current',
    'version, as a frozen dataclass; the rules its reader checks it with; the CATALOG; and one Event',
    'class per type (EVENT_CLASSES). Run ``npx tsx scripts/protocol.ts`` after changing',
    'src/events/catalog.ts. The checkers are _schema.py\'s; catalog.py and events.py export these."""',
    '',
    '# ruff: noqa: E501',
    'from __future__ import annotations',
    '',
    'from dataclasses import dataclass',
    'from typing import Any, ClassVar, Literal, Mapping',
    '',
    'from ._event import Event',
    'from ._schema import (',
    ...[
      'ABSENT',
      'PROMPT',
      'PROMPT_PART',
      'TAG_VALUE',
      'AnyValue',
      'Array',
      'Bool',
      'Const',
      'Enum',
      'EventType',
      'F',
      'Int',
      'Nullable',
      'Num',
      'Obj',
      'OneOf',
      'Pattern',
      'Prompt',
      'PromptPart',
      'Record',
      'Str',
    ].map((n) => `    ${n},`),
    ')',
    '',
  ];
  const enums = new Map<string, string[]>();
  const visit = (s: Shape) => {
    if (s.kind === 'enum') {
      const name = enumNames[[...s.values].sort().join(',')];
      if (name && !enums.has(name)) enums.set(name, s.values);
    } else if (s.kind === 'array') visit(s.items);
    else if (s.kind === 'nullable') visit(s.inner);
  };
  for (const s of model.structs) for (const f of s.fields) visit(f.shape);
  for (const [name, values] of enums) {
    out.push(`${name} = ${literal(values)}`);
    exported.push(name);
  }
  out.push('', '');
  const union = new Map(model.unions.map((u) => [u.name, u]));
  const emittedUnions = new Set<string>();
  for (const s of model.structs) {
    out.push(renderClass(s), '');
    exported.push(className(s.name));
    // a union's alias follows its last member
    for (const u of model.unions) {
      if (!emittedUnions.has(u.name) && u.members.every((m) => model.structs.findIndex((x) => x.name === m) <= model.structs.indexOf(s))) {
        emittedUnions.add(u.name);
        out.push(`#: ${u.doc}`, `${u.name} = ${u.members.map(className).join(' | ')}`, '', '');
        exported.push(u.name);
      }
    }
  }
  out.push("# The rules each payload is read with (zod's, as the schema gives them).", '');
  const unionRules = new Set<string>();
  for (const s of model.structs) {
    out.push(renderRules(s));
    for (const u of union.values()) {
      if (!unionRules.has(u.name) && u.members.every((m) => model.structs.findIndex((x) => x.name === m) <= model.structs.indexOf(s))) {
        unionRules.add(u.name);
        const args = `(${u.members.map(rulesName).join(', ')}), ${str(u.expected)}`;
        const line = `${rule({ kind: 'union', name: u.name, members: u.members })} = OneOf(${args})`;
        out.push(line.length <= 140 ? line : `${line.slice(0, line.indexOf('OneOf(') + 6)}\n    ${args}\n)`);
      }
    }
  }
  out.push('', "#: Every event type, in the order of sessiond's catalog.", 'CATALOG: Mapping[str, EventType] = {');
  for (const e of model.events)
    out.push(`    ${str(e.type)}: EventType(${str(e.type)}, ${e.version}, ${e.durable ? 'True' : 'False'}, ${rulesName(e.struct)}, ${className(e.struct)}),`);
  out.push('}', '', '#: What the upcaster of a version-v payload of a type does (UPCASTERS in catalog.py does it).');
  out.push('UPCASTER_DESCRIPTIONS: Mapping[str, Mapping[int, str]] = {');
  for (const e of model.events) {
    const ups = Object.entries(e.upcasters);
    if (ups.length > 0) out.push(`    ${str(e.type)}: {${ups.map(([v, d]) => `${v}: ${str(d)}`).join(', ')}},`);
  }
  out.push('}', '', '');
  for (const e of model.events) {
    out.push('@dataclass(frozen=True, kw_only=True)', `class ${e.struct}Event(Event):`, `    payload: ${className(e.struct)}`, '', '');
    exported.push(`${e.struct}Event`);
  }
  out.push('#: The Event class of each type, so handlers can match on the class and get a typed payload.');
  out.push('EVENT_CLASSES: Mapping[str, type[Event]] = {');
  for (const e of model.events) out.push(`    ${str(e.type)}: ${e.struct}Event,`);
  out.push('}', '');
  exported.push('CATALOG', 'UPCASTER_DESCRIPTIONS', 'EVENT_CLASSES');
  out.push('__all__ = [', ...exported.map((n) => `    ${str(n)},`), ']', '');
  return out.join('\n');
}
