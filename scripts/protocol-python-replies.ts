/**
 * The Python client's command reply types (clients/python/src/sessiond_client/generated_replies.py),
 * rendered from the reply model scripts/protocol-types.ts reads from commands.schema.json: a frozen
 * dataclass per reply and nested shape the client names, each with its reader (from_wire), and
 * REPLY_READERS, where each verb's reply holds its result. `pythonReplies` says how the client lays
 * each class out (its field order, docs, and the fields it reads with a default for older workers).
 */
import type { Field, ReplyModel, ReplyRoots, Shape, Struct } from './protocol-types.ts';
import { replyRoots } from './protocol-types.ts';
import { docstring, pyName, wrap } from './protocol-python.ts';

export const PYTHON_REPLIES_FILE = 'clients/python/src/sessiond_client/generated_replies.py';

/** The replies the Python client reads: a list's and an events reply's whole body too (SessionPage, EventsPage). */
export const pythonReplyRoots: ReplyRoots = {
  ...replyRoots,
  list: { at: '.', name: 'SessionPage' },
  events: { at: '.', name: 'EventsPage' },
};

interface PyReply {
  /** The class's Python name (the schema model's when not given). */
  name?: string;
  doc?: string;
  /** Its fields in order, by wire key; `raw` is the object as it came (without the reply's `ok`). */
  fields: string[];
  /** Fields of the schema the class leaves to `raw`. */
  omit?: string[];
  /** Comments of fields, by wire key. */
  docs?: Record<string, string>;
  /** Fields read with a default (a Python expression of the object `d`) when left out, as older workers did. */
  lenient?: Record<string, string>;
  /** Lenient fields whose null reads as their default too. */
  nullAsDefault?: string[];
  /** Python types where the schema's shape is not the one the client has always had. */
  types?: Record<string, string>;
  /** Readers of fields the schema cannot describe (a Python expression of the object `d`). */
  reads?: Record<string, string>;
}

/** The Python client's reply classes, by the model's name, in the order they are written (a nested class before its holder). */
export const pythonReplies: Record<string, PyReply> = {
  UploadReply: {
    doc: 'The upload reply: `received`, the bytes taken so far; `blob`, on the last chunk, the reference a prompt part carries.',
    fields: ['received', 'blob', 'raw'],
  },
  BlobChunk: {
    doc: 'The blob reply: `data`, base64 of the bytes from `offset` (at most 512 KiB); `more` when bytes follow; `seq`, the event that references it (send it with the next chunk).',
    fields: ['sha256', 'size', 'mediaType', 'offset', 'data', 'more', 'seq', 'raw'],
  },
  AdmitReceipt: {
    fields: ['sessionId', 'inputId', 'admittedSeq', 'created', 'wake', 'raw'],
    docs: {
      admittedSeq: 'Seq of the `input.admitted` event.',
      created: 'False when the id was admitted before (by an earlier call; an earlier attempt of this call counts as this call).',
    },
  },
  WakeResult: {
    doc: '`status`: started, running_here, nothing_pending, refused, failed, closed (or requested).',
    fields: ['status', 'executionId', 'reason', 'code', 'message', 'raw'],
  },
  CancelResult: {
    fields: ['cancelled', 'executionId', 'reason', 'message', 'raw'],
    docs: { reason: 'Why not, when not cancelled (e.g. `nothing_to_cancel`).' },
  },
  DropResult: {
    fields: ['sessionId', 'dropped', 'seq', 'raw'],
    docs: { seq: 'Seq of the `input.dropped` event (None when nothing was dropped).' },
  },
  ResolveResult: {
    fields: ['sessionId', 'kind', 'name', 'outcome', 'resolved', 'resumeInputId', 'seq', 'raw'],
    docs: {
      kind: 'approval, signal (or timer)',
      outcome: 'approved, denied, delivered (or timed_out, elapsed)',
      resolved: 'False when the wait had already ended so (the same decision sent again): nothing changed.',
      resumeInputId: 'The input that resumes the turn, when this was its last open wait (the turn runs again).',
      seq: 'Seq of the `wait.resolved` event (None when nothing changed).',
    },
  },
  TagResult: {
    fields: ['sessionId', 'tags', 'changed', 'seq', 'raw'],
    docs: {
      tags: "The session's tags after the change.",
      changed: 'False when the session had these tags already (nothing was written).',
      seq: 'Seq of the `session.tagged` event (None when nothing changed).',
    },
  },
  SessionListItem: {
    doc: "A session in a list page: what the answering worker's projection knows of it (`status` has the whole of it, from the log).",
    fields: [
      'sessionId',
      'state',
      'waiting',
      'pendingInputs',
      'seq',
      'createdAt',
      'updatedAt',
      'tags',
      'forkedFrom',
      'raw',
      'ownedBy',
      'calledBy',
      'childCount',
    ],
    docs: {
      state: 'idle, claimed, running, recovering, settled',
      waiting: 'Whether a wait of its turn is open (an approval, a signal, a timer).',
      pendingInputs: 'Inputs admitted and not yet run (nor dropped).',
      seq: 'Seq of its last event.',
      createdAt: 'Times of its first event and of its last (ms since the epoch).',
      forkedFrom: 'The source and seq it was forked from; None when it is not a fork.',
      ownedBy: 'Who it belongs to (fixed by its first admission); None when no one.',
      calledBy: 'The session whose turn last called it (`ctx.callSession`): its parent; None when none has.',
      childCount: 'Sessions whose `calledBy` is this one: its children.',
    },
    lenient: { tags: '{}', forkedFrom: 'None', ownedBy: 'None', calledBy: 'None', childCount: '0' },
    nullAsDefault: ['tags'],
  },
  ForkResult: {
    fields: ['sessionId', 'from', 'seq', 'created', 'items', 'raw'],
    docs: {
      from: 'The source and the seq the fork holds the conversation up to.',
      seq: "Seq of the new session's `session.forked` (1).",
      created:
        'False when the same fork was made before (the same source, and the same `at` when given): nothing was written. As in the Node client, a call whose first attempt went unanswered and whose resend found the fork that attempt made answers so too.',
      items: 'How many conversation items (prompts, steps, summaries) the fork starts with (0 when not created).',
    },
  },
  SessionPage: {
    doc: 'A page of sessions, newest first (by creation time, then session id); `next` is the cursor of the next page (`list(after=page.next)`), None when this page is the last.',
    fields: ['sessions', 'next', 'raw'],
  },
  EventsPage: {
    doc: "A page of a session's committed events, in order (each read and checked as the stream's are); `more`: a next page may follow (ask again after the last seq). A worker cuts a page short to fit the server's max_payload.",
    fields: ['events', 'more', 'raw'],
    types: { events: 'list[Event]' },
    reads: { events: '_events(d["events"], d["more"])' },
  },
  PendingInput: {
    fields: ['inputId', 'delivery', 'seq', 'wake', 'source', 'continues', 'notBefore', 'tags'],
    omit: ['admittedBy'],
    docs: {
      notBefore: "A scheduled prompt's time (ms since the epoch): no turn takes it before then.",
      tags: 'The tags its admission gave the session (None when it gave none).',
    },
    lenient: { source: '"user"' },
  },
  Wait: {
    name: 'WaitInfo',
    doc: "One wait of the session's turn, open (`outcome` None) or resolved in this turn: `kind` approval (a person's decision on call `call_id` of message `message_id`, tool `tool` with `input`; `started` once an approved call has started: it never runs twice), signal (a value from outside, `data` once delivered), timer, or session (another session's turn: `child` names it, `data` is how it ended once delivered); `name` is its key within the turn (the call id, the signal's name, `sleep-N`, the session call's name). `since`: when the turn started to wait; `until`: a timer's time or a signal's timeout.",
    fields: [
      'kind',
      'name',
      'executionId',
      'since',
      'until',
      'messageId',
      'callId',
      'tool',
      'durable',
      'idempotencyKey',
      'outcome',
      'resolvedAt',
      'reason',
      'started',
      'input',
      'data',
      'raw',
      'child',
    ],
    docs: {
      outcome: 'approved, denied, delivered, timed_out, elapsed, cancelled; None while it is open.',
      input: '`ABSENT` when the call has no input.',
      data: '`ABSENT` until a value is delivered (`None` is a value of null).',
      child: 'A session call\'s child: `{"sessionId", "inputId"}` (None for other kinds).',
    },
    lenient: {
      until: 'None',
      messageId: 'None',
      callId: 'None',
      tool: 'None',
      durable: 'False',
      idempotencyKey: 'None',
      outcome: 'None',
      resolvedAt: 'None',
      reason: 'None',
      started: 'False',
    },
    types: { child: 'dict[str, str] | None' },
  },
  ExecutionState: {
    name: 'ExecutionInfo',
    fields: [
      'id',
      'ownerId',
      'leaseMs',
      'expiresAt',
      'assistantSeq',
      'claimedSeq',
      'phase',
      'started',
      'cancelled',
      'outcome',
      'error',
      'openStep',
      'inputIds',
      'inputCount',
      'raw',
      'usage',
    ],
    omit: ['lastMessage', 'openTools'],
    docs: {
      outcome: 'succeeded, failed, released, waiting, cancelled; None while it runs (the owner holds the session only then).',
      usage: "What this execution's model calls used (None before its first).",
    },
    lenient: { outcome: 'None', error: 'None', openStep: 'None', inputIds: '[]', inputCount: 'len(d.get("inputIds", []))' },
  },
  BudgetResult: {
    doc: "A session's budget after a `budget` call: its limits and spend since the latest reset (`budget` None: none set), its usage totals, and whether a `budget.set` event was written (`seq`).",
    fields: ['sessionId', 'budget', 'spent', 'usage', 'changed', 'seq', 'raw'],
    docs: { budget: '`{"tokens": int | None, "costUsd": float | None, "spent": {"tokens": int, "costUsd": float}}`, or None.' },
    lenient: { budget: 'None' },
  },
  Status: {
    name: 'StatusReply',
    doc: 'The session as the answering worker sees it in the log.',
    fields: [
      'sessionId',
      'state',
      'seq',
      'executionId',
      'owner',
      'leaseExpiresAt',
      'leaseLive',
      'leaseLeftMs',
      'phase',
      'outcome',
      'pending',
      'pendingFrom',
      'pendingCount',
      'pendingBytes',
      'pendingBlobBytes',
      'recovery',
      'waits',
      'executions',
      'usage',
      'execution',
      'raw',
      'tags',
      'forkedFrom',
      'ownedBy',
      'budget',
      'tenantBudget',
      'calledBy',
      'children',
    ],
    omit: ['capacity'],
    docs: {
      state: 'idle, claimed, running, recovering, settled',
      outcome: 'How the last execution ended: succeeded, failed, released, waiting, cancelled (None while it runs, or before any).',
      waits: "The turn's waits: open ones (the session waits when `outcome` is `waiting`) and those resolved in this turn.",
      usage: "Tokens (and `costUsd`, where priced) of the session's model calls.",
      tags: "The session's tags (empty when it has none).",
      forkedFrom: 'The source and seq of a fork (None when the session is not one).',
      ownedBy: 'Who the session belongs to (fixed by its first admission; None when no one). `owner` is the worker holding the lease.',
      budget: "The session's budget and spend since its latest reset (None: none set), as `BudgetResult.budget`.",
      tenantBudget:
        "The budget of the session's tenant (`owned_by`), when it has one: `tokens`, `costUsd` (None: no limit), `spent` by all of its sessions since `since` (ms). Set by the admin: `sessiond budget --tenant T`.",
      calledBy: 'The session whose turn last called this one (`ctx.callSession`; None when none has).',
      children: "The sessions this session's turn waits on now (its open session calls).",
    },
    lenient: {
      executionId: 'None',
      owner: 'None',
      leaseExpiresAt: 'None',
      leaseLive: 'False',
      leaseLeftMs: '0',
      phase: 'None',
      outcome: 'None',
      pending: '[]',
      pendingFrom: '0',
      pendingCount: 'len(d.get("pending", []))',
      pendingBytes: '0',
      pendingBlobBytes: '0',
      recovery: 'None',
      waits: '[]',
      executions: '0',
      usage: '{}',
      execution: 'None',
      tags: '{}',
      forkedFrom: 'None',
      ownedBy: 'None',
      budget: 'None',
      calledBy: 'None',
      children: '[]',
    },
    nullAsDefault: ['usage', 'tags', 'children'],
  },
};

const str = (s: string) => JSON.stringify(s);
const pyClass = (name: string) => pythonReplies[name]?.name ?? name;

/** A field's Python type: enums are plain strings, and nested shapes the client has no class for stay dicts. */
function pyType(s: Shape, where: string): string {
  switch (s.kind) {
    case 'string':
    case 'enum':
    case 'const':
      return 'str';
    case 'int':
      return 'int';
    case 'number':
      return 'float';
    case 'bool':
      return 'bool';
    case 'any':
      return 'Any';
    case 'array':
      return `list[${pyType(s.items, where)}]`;
    case 'nullable':
      return `${pyType(s.inner, where)} | None`;
    case 'tags':
      return 'dict[str, str]';
    case 'struct':
      return s.name === 'ForkPoint' ? 'ForkPoint' : pythonReplies[s.name] ? pyClass(s.name) : 'dict[str, Any]';
    default:
      throw new Error(`${where}: a reply shape the Python generator does not know: ${s.kind}`);
  }
}

/** The Python class a shape reads into, if it is one the client has. */
const classOf = (s: Shape): string | undefined => (s.kind === 'struct' && pythonReplies[s.name] ? pyClass(s.name) : undefined);
const isForkPoint = (s: Shape) => s.kind === 'struct' && s.name === 'ForkPoint';

/** Reads the present value `v` of shape `s`: nested classes by their reader, maps and lists copied. */
function readValue(s: Shape, v: string): string {
  if (s.kind === 'nullable') {
    const inner = classOf(s.inner);
    if (inner) return `${inner}.from_wire(${v}) if ${v} is not None else None`;
    return isForkPoint(s.inner) ? `fork_point(${v})` : v;
  }
  const cls = classOf(s);
  if (cls) return `${cls}.from_wire(${v})`;
  if (isForkPoint(s)) return `_fork_point(${v})`;
  if (s.kind === 'struct' || s.kind === 'tags') return `dict(${v})`;
  if (s.kind === 'array') {
    const item = classOf(s.items);
    return item ? `[${item}.from_wire(x) for x in ${v}]` : `list(${v})`;
  }
  return v;
}

/** Reads a field the client defaults when left out (and when null, with `orNull`). */
function readLenient(s: Shape, key: string, fallback: string, orNull: boolean): string {
  const get = `d.get(${str(key)})`;
  if (fallback === 'None') {
    const inner = s.kind === 'nullable' ? s.inner : undefined;
    const cls = inner && classOf(inner);
    if (cls) return `${cls}.from_wire(d[${str(key)}]) if ${get} else None`;
    return inner && isForkPoint(inner) ? `fork_point(${get})` : get;
  }
  const value = orNull ? `${get} or ${fallback}` : `d.get(${str(key)}, ${fallback})`;
  if (fallback === '{}') return `dict(${value})`;
  if (fallback === '[]') {
    const item = s.kind === 'array' ? classOf(s.items) : undefined;
    return item ? `[${item}.from_wire(x) for x in ${value}]` : `list(${value})`;
  }
  if (orNull) throw new Error(`${key}: only a map or a list reads null as its default`);
  return value;
}

function comment(text: string): string[] {
  return wrap(text.replaceAll('`', '``'), '    #: ', 140);
}

function renderClass(s: Struct, py: PyReply): string {
  const name = pyClass(s.name);
  const byKey = new Map(s.fields.map((f) => [f.key, f]));
  for (const f of s.fields) {
    if (!py.fields.includes(f.key) && !(py.omit ?? []).includes(f.key))
      throw new Error(`the reply ${s.name} has the field ${f.key}: add it to its fields (or omit) in scripts/protocol-python-replies.ts`);
  }
  const field = (key: string): Field => {
    const f = byKey.get(key);
    if (!f) throw new Error(`the Python reply ${name} names ${key}, which the schema's ${s.name} does not have`);
    return f;
  };
  const lines: string[] = [];
  const reads: string[] = [];
  let defaulted = false;
  for (const key of py.fields) {
    if (py.docs?.[key]) lines.push(...comment(py.docs[key]!));
    if (key === 'raw') {
      lines.push('    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)');
      reads.push('raw=_raw(d)');
      defaulted = true;
      continue;
    }
    const f = field(key);
    const base = py.types?.[key] ?? pyType(f.shape, `${s.name}.${key}`);
    const type = f.optional && f.shape.kind !== 'any' && !base.endsWith(' | None') ? `${base} | None` : base;
    let decl = `    ${pyName(key)}: ${type}`;
    if (f.optional || defaulted) {
      defaulted = true;
      if (f.shape.kind === 'any') decl += ' = ABSENT';
      else if (type.endsWith(' | None')) decl += ' = None';
      else if (type.startsWith('dict[')) decl += ' = field(default_factory=dict)';
      else if (type.startsWith('list[')) decl += ' = field(default_factory=list)';
      else if (type === 'int') decl += ' = 0';
      else throw new Error(`${name}.${pyName(key)} follows a field with a default but has none`);
    }
    lines.push(decl);
    const lenient = py.lenient?.[key];
    const read =
      py.reads?.[key] ??
      (lenient !== undefined
        ? readLenient(f.shape, key, lenient, (py.nullAsDefault ?? []).includes(key))
        : f.optional
          ? f.shape.kind === 'any'
            ? `d.get(${str(key)}, ABSENT)`
            : `d.get(${str(key)})`
          : readValue(f.shape, `d[${str(key)}]`));
    reads.push(`${pyName(key)}=${read}`);
  }
  const doc = py.doc === undefined ? [] : [docstring(py.doc, '    '), ''];
  return [
    '@dataclass(frozen=True)',
    `class ${name}:`,
    ...doc,
    ...lines,
    '',
    '    @classmethod',
    `    def from_wire(cls, d: Mapping[str, Any]) -> ${name}:`,
    '        return cls(',
    ...reads.map((r) => `            ${r},`),
    '        )',
    '',
  ].join('\n');
}

const helpers = `def _raw(d: Mapping[str, Any]) -> dict[str, Any]:
    """The object as it came (a reply without its \`\`ok\`\`)."""
    return {k: v for k, v in d.items() if k != "ok"}


def _fork_point(d: Mapping[str, Any]) -> ForkPoint:
    return ForkPoint(d["sessionId"], d["seq"])


def fork_point(d: Any) -> ForkPoint | None:
    """A reply's \`\`{"sessionId", "seq"}\`\` (\`\`forkedFrom\`\`, a fork's \`\`from\`\`) as a \`\`ForkPoint\`\`; None for null."""
    return None if d is None else _fork_point(d)


_EVENTS_HINT = "A worker read it from the log: is this client older than the workers? (upgrade it)"


def _events(frames: Any, more: Any) -> list[Event]:
    """An events reply's frames, each read and checked as the stream's are."""
    if not isinstance(frames, list) or not isinstance(more, bool):
        raise TypeError("events must be a list and more a boolean")
    return [event_from_frame(f, describe=f"Event {i} of the events reply", hint=_EVENTS_HINT) for i, f in enumerate(frames)]
`;

export function renderPythonReplies(model: ReplyModel, roots: ReplyRoots = pythonReplyRoots): string {
  const structs = new Map(model.structs.map((s) => [s.name, s]));
  const out: string[] = [
    '# Code generated by scripts/protocol.ts; DO NOT EDIT.',
    '"""The command replies of clients/protocol/schema/commands.schema.json as frozen dataclasses, each',
    "with its reader (``from_wire``: a field the reply lacks raises KeyError), and REPLY_READERS, each verb's",
    'reader. Run ``npx tsx scripts/protocol.ts`` after changing src/nats/command-schema.ts; commands.py',
    'exports these."""',
    '',
    '# ruff: noqa: E501',
    'from __future__ import annotations',
    '',
    'from dataclasses import dataclass, field',
    'from typing import Any, Callable, Mapping',
    '',
    'from ._schema import ABSENT',
    'from .events import Event, event_from_frame',
    'from .generated import ForkPoint',
    '',
    '',
    helpers,
    '',
  ];
  for (const [name, py] of Object.entries(pythonReplies)) {
    const s = structs.get(name);
    if (!s) throw new Error(`the Python reply ${name} is not in commands.schema.json's replies`);
    out.push(renderClass(s, py), '');
  }
  const rootNames = Object.values(roots).map((r) => pyClass(r.name));
  const union = `Reply = ${rootNames.join(' | ')}`;
  // as ruff formats it: on one line when it fits, else one member a line
  out.push('#: What a command answers (the result of its reply).');
  out.push(union.length <= 140 ? union : `Reply = (\n    ${rootNames.join('\n    | ')}\n)`, '', '');
  out.push("#: Each verb's reader: the result of its reply, where the reply holds it.");
  out.push('REPLY_READERS: Mapping[str, Callable[[Mapping[str, Any]], Reply]] = {');
  for (const [verb, { at, name }] of Object.entries(roots)) {
    if (at === '.') out.push(`    ${str(verb)}: ${pyClass(name)}.from_wire,`);
    else if (/^\w+$/.test(at)) out.push(`    ${str(verb)}: lambda r: ${pyClass(name)}.from_wire(r[${str(at)}]),`);
    else throw new Error(`the Python client reads no reply at ${at} (${verb})`);
  }
  out.push('}', '');
  out.push('__all__ = [', ...[...Object.keys(pythonReplies).map(pyClass), 'Reply', 'REPLY_READERS', 'fork_point'].map((n) => `    ${str(n)},`), ']', '');
  return out.join('\n');
}
