/**
 * The clients' per-event types, read from the protocol schema (clients/protocol/schema): a
 * language-neutral model that scripts/protocol-go.ts and scripts/protocol-python.ts render. Object
 * shapes inside payloads are named by their key sets (`shapeNames`); a shape the table does not name
 * is an error here, so a new nested object gets a name before any client sees it.
 */
import { typeDocs } from './protocol-docs.ts';

type JsonSchema = Record<string, unknown> & {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  enum?: string[];
  const?: string;
  default?: unknown;
};

export type Shape =
  | { kind: 'string'; minLength?: number; maxLength?: number; pattern?: string }
  | { kind: 'enum'; values: string[] }
  | { kind: 'const'; value: string }
  | { kind: 'int'; min?: number; exclusive?: boolean }
  | { kind: 'number'; min?: number }
  | { kind: 'bool' }
  | { kind: 'any' }
  | { kind: 'array'; items: Shape; minItems?: number }
  | { kind: 'nullable'; inner: Shape }
  | { kind: 'tags'; nullValues: boolean }
  | { kind: 'struct'; name: string }
  | { kind: 'union'; name: string; members: string[] }
  | { kind: 'prompt' }
  | { kind: 'promptPart' };

export interface Field {
  key: string;
  shape: Shape;
  /** Absent is allowed (and no default fills it in). */
  optional: boolean;
  default?: string;
}

export interface Struct {
  name: string;
  doc: string;
  fields: Field[];
  /** The constant `type` of a union member (its class-level discriminator), if any. */
  tag?: string;
}

export interface EventEntry {
  type: string;
  struct: string;
  version: number;
  durable: boolean;
  upcasters: Record<string, string>;
}

export interface Union {
  name: string;
  doc: string;
  members: string[];
  /** How a reader names what it expected, in an error. */
  expected: string;
}

export interface Model {
  /** Every struct, in the order first met (nested ones before the payload that holds them). */
  structs: Struct[];
  unions: Union[];
  events: EventEntry[];
}

/** Names of nested object shapes, by their sorted keys. */
const shapeNames: Record<string, string> = {
  'message,name,type': 'RecordedError',
  'cachedInputTokens,costUsd,inputTokens,outputTokens,reasoningTokens': 'Usage',
  'callId,idempotencyKey,messageId,name': 'RetryTool',
  'assistantMessageId,executionId,inputIds,phase,reason,retryTools,traceparent': 'Continuation',
  'inputId,sessionId': 'WaitChild',
  'seq,sessionId': 'ForkPoint',
  'length,partId': 'RecordedPart',
  'outcome,reason': 'ToolDecision',
  'partId,text,type': 'TranscriptText',
  'callId,decision,durable,error,idempotencyKey,input,name,output,state,type': 'TranscriptTool',
  'continues,delivery,executionId,inputId,parts,text,type': 'TranscriptUser',
  'error,executionId,finish,messageId,parts,status,type,usage': 'TranscriptAssistant',
  'executionId,messageId,summary,type': 'TranscriptSummary',
};

/** Names of unions of objects told apart by `type`, by their sorted type values. */
const unionNames: Record<string, { name: string; expected: string }> = {
  'assistant,summary,user': { name: 'TranscriptItem', expected: 'a transcript item (user, assistant or summary)' },
  'reasoning,text,tool': { name: 'TranscriptPart', expected: 'a part (text, reasoning or tool)' },
};

/** The struct name of an event type's payload: its words, capitalised (`model.retry_scheduled` is ModelRetryScheduled). */
export const structName = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

const isNull = (s: JsonSchema) => s.type === 'null';
const typeValues = (s: JsonSchema): string[] | undefined => {
  const t = s.properties?.type;
  if (!t) return undefined;
  if (typeof t.const === 'string') return [t.const];
  return t.enum;
};

export function readModel(eventsSchema: Record<string, unknown>, docs: Record<string, string> = typeDocs): Model {
  const payloads = (eventsSchema.$defs as { payloads: Record<string, JsonSchema> }).payloads;
  const structs = new Map<string, { struct: Struct; canonical: string }>();
  const unions = new Map<string, Union>();

  const named = (s: JsonSchema, where: string, name: string | undefined, tag?: string): string => {
    const keys = Object.keys(s.properties ?? {});
    const structNameOf = name ?? shapeNames[[...keys].sort().join(',')];
    if (!structNameOf) throw new Error(`${where}: an object of keys ${keys.join(', ')} has no name: add one to shapeNames in scripts/protocol-types.ts`);
    const canonical = JSON.stringify(s);
    const have = structs.get(structNameOf);
    if (have) {
      if (have.canonical !== canonical) throw new Error(`${where}: ${structNameOf} has another shape here than where it was first met`);
      return structNameOf;
    }
    const required = new Set(s.required ?? []);
    const fields: Field[] = [];
    for (const [key, sub] of Object.entries(s.properties ?? {})) {
      if (key === 'type' && tag !== undefined) continue; // a union member's constant type
      const field: Field = { key, shape: shape(sub, `${where}.${key}`), optional: !required.has(key) };
      if (sub.default !== undefined) {
        field.default = String(sub.default);
        field.optional = false;
      }
      fields.push(field);
    }
    const doc = docs[structNameOf];
    if (doc === undefined) throw new Error(`${structNameOf} has no doc: add one to scripts/protocol-docs.ts`);
    const struct: Struct = { name: structNameOf, doc, fields, ...(tag === undefined ? {} : { tag }) };
    structs.set(structNameOf, { struct, canonical });
    return structNameOf;
  };

  const shape = (s: JsonSchema, where: string): Shape => {
    if (Object.keys(s).length === 0) return { kind: 'any' };
    if (s.anyOf) {
      const nonNull = s.anyOf.filter((x) => !isNull(x));
      if (nonNull.length === 1 && s.anyOf.length === 2) return { kind: 'nullable', inner: shape(nonNull[0]!, where) };
      if (s.anyOf.length === 2 && s.anyOf[0]!.type === 'string' && s.anyOf[1]!.type === 'array') return { kind: 'prompt' };
      if (s.anyOf.every((x) => x.type === 'object' && x.additionalProperties === false && typeValues(x))) return { kind: 'promptPart' };
      const values = s.anyOf.map(typeValues);
      if (values.every((v) => v !== undefined)) {
        const key = values.flat().sort().join(',');
        const u = unionNames[key];
        if (!u) throw new Error(`${where}: a union of types ${key} has no name: add one to unionNames in scripts/protocol-types.ts`);
        const members = s.anyOf.map((m) => {
          const v = typeValues(m)!;
          return named(m, `${where}[${v.join('|')}]`, undefined, v.length === 1 ? v[0] : undefined);
        });
        if (!unions.has(u.name)) unions.set(u.name, { name: u.name, doc: docs[u.name] ?? '', members, expected: u.expected });
        return { kind: 'union', name: u.name, members };
      }
      throw new Error(`${where}: an anyOf the generators do not know`);
    }
    switch (s.type) {
      case 'string':
        if (s.enum) return { kind: 'enum', values: s.enum };
        if (typeof s.const === 'string') return { kind: 'const', value: s.const };
        return {
          kind: 'string',
          ...(typeof s.minLength === 'number' ? { minLength: s.minLength } : {}),
          ...(typeof s.maxLength === 'number' ? { maxLength: s.maxLength } : {}),
          ...(typeof s.pattern === 'string' ? { pattern: s.pattern } : {}),
        };
      case 'integer':
        if (typeof s.exclusiveMinimum === 'number') return { kind: 'int', min: s.exclusiveMinimum, exclusive: true };
        return { kind: 'int', ...(typeof s.minimum === 'number' ? { min: s.minimum } : {}) };
      case 'number':
        if (typeof s.exclusiveMinimum === 'number') throw new Error(`${where}: an exclusive minimum of a number`);
        return { kind: 'number', ...(typeof s.minimum === 'number' ? { min: s.minimum } : {}) };
      case 'boolean':
        return { kind: 'bool' };
      case 'array':
        return { kind: 'array', items: shape(s.items ?? {}, `${where}[]`), ...(typeof s.minItems === 'number' ? { minItems: s.minItems } : {}) };
      case 'object':
        if (s.propertyNames) {
          const values = s.additionalProperties as JsonSchema;
          return { kind: 'tags', nullValues: Boolean(values.anyOf?.some(isNull)) };
        }
        return { kind: 'struct', name: named(s, where, undefined) };
      default:
        throw new Error(`${where}: a schema the generators do not know: ${JSON.stringify(s).slice(0, 200)}`);
    }
  };

  const events: EventEntry[] = [];
  for (const [type, s] of Object.entries(payloads)) {
    const { 'x-sessiond-version': version, 'x-sessiond-durable': durable, 'x-sessiond-upcasters': upcasters, 'x-sessiond-writer': _w, ...schema } = s;
    const name = named(schema as JsonSchema, type, structName(type));
    events.push({ type, struct: name, version: version as number, durable: durable as boolean, upcasters: (upcasters ?? {}) as Record<string, string> });
  }
  return { structs: [...structs.values()].map((s) => s.struct), unions: [...unions.values()], events };
}

/** `executionId` as a Go or Python name's words: execution, Id. */
export const words = (key: string) => key.split(/(?=[A-Z])/);
