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
  'callId,decision,durable,error,idempotencyKey,input,name,output,outputBlob,state,type': 'TranscriptTool',
  'mediaType,sha256,size': 'BlobRef',
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

// ---------------------------------------------------------------------------------------------- replies

/** Names of the command replies' object shapes, by their sorted keys (a reply's root by its verb, in `replyRoots`). */
const replyShapeNames: Record<string, string> = {
  'admittedSeq,created,inputId,sessionId,wake': 'AdmitReceipt',
  'code,executionId,message,reason,status': 'WakeResult',
  'cancelled,executionId,message,reason': 'CancelResult',
  'dropped,seq,sessionId': 'DropResult',
  'kind,name,outcome,resolved,resumeInputId,seq,sessionId': 'ResolveResult',
  'changed,seq,sessionId,tags': 'TagResult',
  'created,from,items,seq,sessionId': 'ForkResult',
  'budget,changed,seq,sessionId,spent,usage': 'BudgetResult',
  'costUsd,spent,tokens': 'Budget',
  'costUsd,tokens': 'Spend',
  'costUsd,since,spent,tokens': 'TenantBudget',
  'calledBy,childCount,createdAt,forkedFrom,ownedBy,pendingInputs,seq,sessionId,state,tags,updatedAt,waiting': 'SessionListItem',
  'admittedBy,continues,delivery,inputId,notBefore,seq,source,tags,wake': 'PendingInput',
  'callId,child,data,durable,executionId,idempotencyKey,input,kind,messageId,name,outcome,reason,resolvedAt,since,started,tool,until': 'Wait',
  'id,position': 'EventRef',
  'assistantSeq,cancelled,claimedSeq,error,expiresAt,id,inputCount,inputIds,lastMessage,leaseMs,openStep,openTools,outcome,ownerId,phase,started,usage':
    'ExecutionState',
  'callId,durable,idempotencyKey,messageId,name': 'OpenTool',
  'committedAt,id,payload,position,seq,sessionId,time,type,version': 'EventFrame',
  'attempts,continuationInputId,executionId,lastAttemptAt,lastError,parked,wakePending': 'RecoveryState',
  'limits,since': 'Capacity',
  'blob,received': 'UploadReply',
  'mediaType,sha256,size': 'BlobRef',
  'data,mediaType,more,offset,sha256,size': 'BlobChunk',
  'inFlight,limit,scope,waiting': 'CapacityLimit',
  // shapes the payloads name too
  'message,name,type': 'RecordedError',
  'cachedInputTokens,costUsd,inputTokens,outputTokens,reasoningTokens': 'Usage',
  'inputId,sessionId': 'WaitChild',
  'seq,sessionId': 'ForkPoint',
  'callId,idempotencyKey,messageId,name': 'RetryTool',
  'assistantMessageId,executionId,inputIds,phase,reason,retryTools': 'Continuation',
};
export type ReplyRoots = Record<string, { at: string; name: string }>;
/** The verbs whose reply has a type, and where in the reply it is: `receipt`, `result`, the body itself (`.`), or its `sessions[]`. */
export const replyRoots: ReplyRoots = {
  admit: { at: 'receipt', name: 'AdmitReceipt' },
  wake: { at: 'result', name: 'WakeResult' },
  cancel: { at: 'result', name: 'CancelResult' },
  drop: { at: 'result', name: 'DropResult' },
  resolve: { at: 'result', name: 'ResolveResult' },
  tag: { at: 'result', name: 'TagResult' },
  fork: { at: 'result', name: 'ForkResult' },
  budget: { at: 'result', name: 'BudgetResult' },
  status: { at: '.', name: 'Status' },
  list: { at: 'sessions[]', name: 'SessionListItem' },
  upload: { at: '.', name: 'UploadReply' },
  blob: { at: '.', name: 'BlobChunk' },
};
/** Shapes the payload model holds already (the reply's checks may be looser; the type is the same). */
const sharedWithPayloads = new Set(['RecordedError', 'Usage', 'RetryTool', 'Continuation', 'WaitChild', 'ForkPoint', 'BlobRef']);

export interface ReplyModel {
  structs: Struct[];
}

/** The command replies' types, read from commands.schema.json: a oneOf of objects merges into one type (a field is required where every variant requires it). */
export function readReplies(commandsSchema: Record<string, unknown>, roots: ReplyRoots = replyRoots): ReplyModel {
  const verbs = commandsSchema['x-sessiond-verbs'] as Record<string, { reply: { oneOf: JsonSchema[] } }>;
  const structs = new Map<string, Struct>();

  const merge = (variants: JsonSchema[]): JsonSchema => {
    const properties: Record<string, JsonSchema> = {};
    const requiredIn = new Map<string, number>();
    for (const v of variants) {
      for (const [k, p] of Object.entries(v.properties ?? {})) {
        const have = properties[k];
        if (!have) properties[k] = p;
        else if (JSON.stringify(have) !== JSON.stringify(p)) {
          const consts = [have, p].every((x) => typeof x.const === 'string' || x.enum);
          properties[k] =
            have.type === 'boolean' && p.type === 'boolean'
              ? { type: 'boolean' }
              : consts
                ? { type: 'string', enum: [...new Set([...(have.enum ?? [have.const as string]), ...(p.enum ?? [p.const as string])])] }
                : {
                    anyOf: [...(have.anyOf ?? [have]), ...(p.anyOf ?? [p])].filter(
                      (x, i, all) => all.findIndex((y) => JSON.stringify(y) === JSON.stringify(x)) === i,
                    ),
                  };
        }
      }
      for (const k of v.required ?? []) requiredIn.set(k, (requiredIn.get(k) ?? 0) + 1);
    }
    return { type: 'object', properties, required: [...requiredIn].filter(([, n]) => n === variants.length).map(([k]) => k) };
  };

  const named = (s: JsonSchema, where: string, name?: string): string => {
    const keys = Object.keys(s.properties ?? {}).filter((k) => k !== 'ok');
    const structNameOf = name ?? replyShapeNames[[...keys].sort().join(',')];
    if (!structNameOf)
      throw new Error(`${where}: a reply object of keys ${keys.join(', ')} has no name: add one to replyShapeNames in scripts/protocol-types.ts`);
    if (sharedWithPayloads.has(structNameOf) || structs.has(structNameOf)) return structNameOf;
    const required = new Set(s.required ?? []);
    const fields: Field[] = keys.map((key) => ({ key, shape: shape(s.properties![key]!, `${where}.${key}`), optional: !required.has(key) }));
    structs.set(structNameOf, { name: structNameOf, doc: '', fields });
    return structNameOf;
  };

  const shape = (s: JsonSchema, where: string): Shape => {
    if (Object.keys(s).length === 0) return { kind: 'any' };
    if (Array.isArray(s.type)) {
      const types = s.type as string[];
      const inner = types.filter((t) => t !== 'null');
      if (inner.length !== 1) throw new Error(`${where}: a type union the generators do not know`);
      const one = shape({ ...s, type: inner[0] }, where);
      return types.includes('null') ? { kind: 'nullable', inner: one } : one;
    }
    const alts = s.anyOf ?? (s.oneOf as JsonSchema[] | undefined);
    if (alts) {
      const nonNull = alts.filter((x) => !isNull(x));
      const inner =
        nonNull.length === 1
          ? shape(nonNull[0]!, where)
          : nonNull.every((x) => x.type === 'object')
            ? { kind: 'struct' as const, name: named(merge(nonNull), where) }
            : undefined;
      if (!inner) throw new Error(`${where}: an anyOf the generators do not know`);
      return nonNull.length < alts.length ? { kind: 'nullable', inner } : inner;
    }
    switch (s.type) {
      case 'string':
        if (s.enum) return { kind: 'enum', values: s.enum };
        if (typeof s.const === 'string') return { kind: 'const', value: s.const };
        return { kind: 'string' };
      case 'integer':
        return { kind: 'int' };
      case 'number':
        return { kind: 'number' };
      case 'boolean':
        return { kind: 'bool' };
      case 'array':
        return { kind: 'array', items: shape(s.items ?? {}, `${where}[]`) };
      case 'object':
        if (s.propertyNames) return { kind: 'tags', nullValues: false };
        return { kind: 'struct', name: named(s, where) };
      default:
        throw new Error(`${where}: a reply schema the generators do not know: ${JSON.stringify(s).slice(0, 200)}`);
    }
  };

  for (const [verb, { at, name }] of Object.entries(roots)) {
    const body = verbs[verb]?.reply.oneOf[0];
    if (!body) throw new Error(`commands.schema.json has no verb ${verb}`);
    const root = at === '.' ? body : at.endsWith('[]') ? body.properties![at.slice(0, -2)]!.items! : body.properties![at]!;
    const rootAlts = root.oneOf as JsonSchema[] | undefined;
    named(rootAlts ? merge(rootAlts) : root, verb, name);
  }
  return { structs: [...structs.values()] };
}
