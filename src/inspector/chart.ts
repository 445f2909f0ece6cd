/**
 * The session machine's state chart, read from the machine definition: `chartModel` walks it,
 * `machineToDot`/`machineToMermaid` print it, `renderSvg` lays DOT out with Graphviz (WebAssembly,
 * offline). What the edges mean: docs/inspector.md#the-chart.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { instance, type Viz } from '@viz-js/viz';
import type { AnyStateMachine } from 'xstate';
import { isEventType } from '../events/catalog.ts';

/** One branch of a command's transition: the guard that selects it (none: the fallback) and what it does. */
export interface CommandBranch {
  guard: string | null;
  action: string;
}

export interface CommandRule {
  command: string;
  branches: CommandBranch[];
}

export interface ChartModel {
  id: string;
  initial: string;
  /** State ids (nested states as dotted paths), in definition order. */
  states: string[];
  /** Committed events that move the machine from one state to another. */
  moves: { from: string; to: string; event: string }[];
  /** Commands each state decides itself. */
  commands: Record<string, CommandRule[]>;
  /** Commands the root decides for every state that does not handle them. */
  fallbacks: CommandRule[];
  /** Events folded into the context wherever the machine is, without moving it. */
  folded: string[];
}

export interface DotOptions {
  /** State to highlight (the session's current state). */
  highlight?: string;
  /** The committed-event move to highlight (the transition just taken); ignored when the machine has no such move. */
  move?: { from: string; event: string };
  /** Draw each state's commands and refusals as dashed self-loops, and the root's in the legend (default false). */
  commands?: boolean;
}

// The machine's internals are loosely typed in xstate; these are the parts the chart reads.
interface NodeLike {
  key: string;
  path: string[];
  states: Record<string, NodeLike>;
  initial?: { target?: NodeLike[] };
  transitions: Map<string, TransitionLike[]>;
}
interface TransitionLike {
  target?: NodeLike[] | undefined;
  guard?: unknown;
  actions: readonly unknown[];
}
type GuardFn = ((...args: never[]) => unknown) & { guards?: unknown[] };

/** The states, moves and command rules of a machine, read from its state nodes. */
export function chartModel(machine: AnyStateMachine): ChartModel {
  const root = machine.root as unknown as NodeLike;
  const idOf = (node: NodeLike) => node.path.join('.');
  const model: ChartModel = {
    id: machine.id,
    initial: root.initial?.target?.[0] ? idOf(root.initial.target[0]) : '',
    states: [],
    moves: [],
    commands: {},
    fallbacks: [],
    folded: [],
  };
  const visit = (node: NodeLike) => {
    for (const child of Object.values(node.states)) {
      const id = idOf(child);
      model.states.push(id);
      model.commands[id] = [];
      for (const [event, transitions] of child.transitions) {
        if (isEventType(event)) {
          for (const t of transitions) for (const target of t.target ?? []) model.moves.push({ from: id, to: idOf(target), event });
        } else {
          model.commands[id]!.push(ruleOf(event, transitions));
        }
      }
      visit(child);
    }
  };
  visit(root);
  for (const [event, transitions] of root.transitions) {
    if (isEventType(event)) model.folded.push(event);
    else model.fallbacks.push(ruleOf(event, transitions));
  }
  return model;
}

function ruleOf(command: string, transitions: TransitionLike[]): CommandRule {
  return {
    command,
    branches: transitions.map((t) => ({ guard: t.guard === undefined ? null : guardName(t.guard), action: t.actions.map(actionName).join(', ') || 'nothing' })),
  };
}

/** `leaseLive`, `!holdsClaim`, `isCurrentExecution && cancelled`. */
export function guardName(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const fn = guard as GuardFn;
    const inner = (fn.guards ?? []).map(guardName);
    if (fn.name === 'not' && inner.length === 1) return `!${wrap(inner[0]!)}`;
    if (fn.name === 'and') return inner.map(wrap).join(' && ');
    if (fn.name === 'or') return inner.map(wrap).join(' || ');
    return fn.name || 'guard';
  }
  if (guard && typeof guard === 'object' && 'type' in guard) return String((guard as { type: unknown }).type);
  return 'guard';
}
const wrap = (s: string) => (/[ &|]/.test(s) ? `(${s})` : s);

/** `decide`, `refuse lease_live`, `fold`. */
function actionName(action: unknown): string {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') return action.name || 'action';
  if (action && typeof action === 'object' && 'type' in action) {
    const { type, params } = action as { type: unknown; params?: unknown };
    const values = params && typeof params === 'object' ? Object.values(params).filter((v) => typeof v === 'string' || typeof v === 'number') : [];
    return [String(type), ...values.map(String)].join(' ');
  }
  return 'action';
}

/** One line per branch: `claim [ownsLiveLease] / refuse own_lease_live`, `claim [else] / ...`. */
export function ruleLines(rule: CommandRule): string[] {
  return rule.branches.map((b, i) => {
    const guard = b.guard !== null ? ` [${b.guard}]` : i > 0 ? ' [else]' : '';
    return `${rule.command}${guard} / ${b.action}`;
  });
}

const FONT = 'Helvetica,Arial,sans-serif';
/** The chart's smallest font size (edge labels, commands, legend), in the SVG's units. */
export const LABEL_SIZE = 11;
const q = (s: string) => `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
/** A left-justified multi-line DOT label. */
const lines = (ls: string[]) => `"${ls.map((l) => l.replaceAll('\\', '\\\\').replaceAll('"', '\\"')).join('\\l')}\\l"`;

/** The chart in Graphviz DOT. States get `id="state_<name>"`; the highlighted one `class="current"`. */
export function machineToDot(machine: AnyStateMachine, options: DotOptions = {}): string {
  const model = chartModel(machine);
  if (options.highlight !== undefined && !model.states.includes(options.highlight)) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Cannot highlight state "${options.highlight}": the ${model.id} machine has states ${model.states.join(', ')}.`,
    );
  }
  const commands = options.commands ?? false;
  const title = commands
    ? `${model.id} machine: solid = committed event moves the state; dashed = command, [guard] / what it decides`
    : `${model.id} machine: committed events move the state (commands and refusals hidden)`;
  // top to bottom and tight: at the inspector's width its smallest label (LABEL_SIZE) reads at 11 px or more;
  // the chart with commands is wider than any panel and is laid out left to right (the page scrolls it)
  const layout = commands ? 'rankdir=LR, nodesep=0.5, ranksep=0.9' : 'rankdir=TB, nodesep=0.3, ranksep=0.5';
  const out = [
    `digraph ${q(model.id)} {`,
    `  graph [${layout}, fontname=${q(FONT)}, fontsize=13, pad=0.3, label=${q(title)}, labelloc=t];`,
    `  node [shape=box, style="rounded,filled", fillcolor="#ffffff", color="#333333", fontname=${q(FONT)}, fontsize=14, margin="0.25,0.12"];`,
    `  edge [fontname=${q(FONT)}, fontsize=${LABEL_SIZE}, color="#333333"];`,
    `  "__initial" [shape=point, width=0.15, fillcolor="#333333", label="", id="initial"];`,
  ];
  if (model.initial) out.push(`  "__initial" -> ${q(model.initial)};`);
  for (const s of model.states) {
    const current = s === options.highlight;
    const attrs = [`id=${q(`state_${s}`)}`, `label=${q(s)}`];
    if (current)
      attrs.push(
        'class="current"',
        'fillcolor="#ffd54f"',
        'penwidth=3',
        'fontname="Helvetica-Bold,Arial Bold,sans-serif"',
        `tooltip=${q(`current state: ${s}`)}`,
      );
    out.push(`  ${q(s)} [${attrs.join(', ')}];`);
  }
  for (const m of model.moves) {
    const taken = options.move !== undefined && options.move.from === m.from && options.move.event === m.event;
    const attrs = [
      `label=${q(m.event)}`,
      `id=${q(`move_${m.from}_${m.event}`)}`,
      taken ? 'class="move taken", color="#e37400", fontcolor="#b35c00", penwidth=3' : 'class="move"',
    ];
    out.push(`  ${q(m.from)} -> ${q(m.to)} [${attrs.join(', ')}];`);
  }
  if (commands) {
    for (const s of model.states) {
      const rules = model.commands[s] ?? [];
      if (rules.length === 0) continue;
      out.push(
        `  ${q(s)} -> ${q(s)} [style=dashed, color="#777777", fontcolor="#444444", fontsize=${LABEL_SIZE}, class="commands", id=${q(`commands_${s}`)}, label=${lines(rules.flatMap(ruleLines))}];`,
      );
    }
  }
  const legend = [
    ...(commands ? ['Commands in any state that does not decide them itself:', ...model.fallbacks.flatMap(ruleLines).map((l) => `  ${l}`)] : []),
    `Every committed event (${model.folded.length} types) also folds the context.`,
  ];
  out.push(`  "__legend" [shape=note, style=filled, fillcolor="#f5f5f5", color="#999999", fontsize=${LABEL_SIZE}, id="legend", label=${lines(legend)}];`);
  out.push('}');
  return `${out.join('\n')}\n`;
}

/** The chart as a Mermaid `stateDiagram-v2`; on demand, commands as notes and root fallbacks as comments. */
export function machineToMermaid(machine: AnyStateMachine, options: { highlight?: string; commands?: boolean } = {}): string {
  const model = chartModel(machine);
  const id = (s: string) => s.replaceAll('.', '__');
  const out = ['stateDiagram-v2', `  %% ${model.id} machine, generated from its definition`];
  if (model.initial) out.push(`  [*] --> ${id(model.initial)}`);
  for (const s of model.states) out.push(`  state "${s}" as ${id(s)}`);
  for (const m of model.moves) out.push(`  ${id(m.from)} --> ${id(m.to)} : ${m.event}`);
  if (options.commands ?? false) {
    for (const s of model.states) {
      const ls = (model.commands[s] ?? []).flatMap(ruleLines);
      if (ls.length === 0) continue;
      out.push(`  note right of ${id(s)}`, ...ls.map((l) => `    ${l}`), '  end note');
    }
    out.push('  %% commands in any state that does not decide them itself:');
    for (const l of model.fallbacks.flatMap(ruleLines)) out.push(`  %%   ${l}`);
  }
  if (options.highlight !== undefined) {
    out.push('  classDef current fill:#ffd54f,stroke:#333,stroke-width:3px', `  class ${id(options.highlight)} current`);
  }
  return `${out.join('\n')}\n`;
}

let viz: Promise<Viz> | undefined;

/** Lays DOT out with Graphviz (WebAssembly, loaded once) and returns an SVG document. */
export async function renderSvg(dot: string): Promise<string> {
  viz ??= instance();
  return (await viz).renderString(dot, { format: 'svg' });
}
