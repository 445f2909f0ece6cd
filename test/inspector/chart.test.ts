/**
 * The state chart is generated from the machine: every state and every event transition of the
 * definition appears (a state added in a copy appears too), commands carry their guards, the
 * current state is highlighted, SVG renders offline, and `sessiond chart` prints it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { createMachine } from 'xstate';
import { sessionMachine } from '../../src/machines/session-machine.ts';
import { isEventType } from '../../src/events/catalog.ts';
import { chartModel, machineToDot, machineToMermaid, renderSvg } from '../../src/inspector/chart.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const states = Object.keys(sessionMachine.root.states);

/** Every (from, event, to) the machine definition holds, read independently of chart.ts. */
function definedMoves() {
  const moves: [string, string, string][] = [];
  for (const [name, node] of Object.entries(sessionMachine.root.states)) {
    for (const [event, transitions] of node.transitions) {
      if (!isEventType(event)) continue;
      for (const t of transitions) for (const target of t.target ?? []) moves.push([name, event, target.key]);
    }
  }
  return moves;
}

test('chart - the machine has the five documented states and some moves (sanity for the tests below)', () => {
  assert.equal(states, ['idle', 'claimed', 'running', 'recovering', 'settled']);
  assert.ok(definedMoves().length >= 8);
});

test('chart - DOT holds every state of the machine and every committed-event move as a solid edge', () => {
  const dot = machineToDot(sessionMachine);
  for (const s of states) assert.match(dot, `"${s}" [id="state_${s}", label="${s}"]`);
  for (const [from, event, to] of definedMoves()) {
    assert.match(dot, `"${from}" -> "${to}" [label="${event}"`, `${from} --${event}--> ${to}`);
  }
  assert.match(dot, '"__initial" -> "idle"');
  assert.not.match(dot, 'class="current"', 'no highlight unless asked');
});

test('chart - commands are hidden by default; on demand they appear with their guards as dashed self-loops, root fallbacks in the legend', () => {
  const plain = machineToDot(sessionMachine);
  assert.not.match(plain, 'commands_', 'states and committed events only');
  assert.not.match(plain, 'refuse');
  assert.match(plain, '(commands and refusals hidden)');
  const dot = machineToDot(sessionMachine, { commands: true });
  const claimed = dot.split('\n').find((l) => l.includes('id="commands_claimed"'))!;
  assert.ok(claimed, 'claimed has a command loop');
  assert.match(claimed, 'style=dashed');
  assert.match(claimed, 'claim [ownsLiveLease] / refuse own_lease_live\\l');
  assert.match(claimed, 'claim [leaseLive] / refuse lease_live\\l');
  assert.match(claimed, 'claim [else] / refuse lease_expired\\l');
  assert.match(claimed, 'recover [leaseLive] / refuse lease_not_expired');
  const running = dot.split('\n').find((l) => l.includes('id="commands_running"'))!;
  assert.match(running, 'record [!holdsClaim] / refuse claim_lost');
  const legend = dot.split('\n').find((l) => l.includes('id="legend"'))!;
  for (const command of ['claim', 'renew', 'start', 'record', 'settle', 'cancel', 'admit', 'recover', 'requestWake', 'failWake']) {
    assert.match(legend, `  ${command} `, `${command} in the legend`);
  }
  assert.match(legend, 'record [isCurrentExecution && cancelled] / refuse cancelled');
  assert.match(legend, 'requestWake [wakePending] / decide');
  // waiting: the rules of waits are on the chart by their names
  const settled = dot.split('\n').find((l) => l.includes('id="commands_settled"'))!;
  assert.match(settled, 'claim [hasOpenWaits] / refuse waiting\\l');
  assert.match(settled, 'resolve [waitNotDue] / refuse not_due\\l');
  assert.match(settled, 'resolve [noSuchWait] / refuse no_such_wait\\l');
  assert.match(dot.split('\n').find((l) => l.includes('id="commands_running"'))!, 'startsOnlyApprovedCalls');
});

test('chart - a state added to a copy of the machine shows up (the chart is derived, not drawn)', () => {
  const config = sessionMachine.config;
  const base = config.states as Record<string, { on?: Record<string, unknown> }>;
  const states = {
    ...base,
    idle: { ...base.idle, on: { ...base.idle!.on, 'recovery.started': { target: 'paused' } } },
    paused: { on: { 'execution.started': { target: 'running' } } },
  };
  const copy = createMachine({ ...config, states } as never, sessionMachine.implementations as never);
  const model = chartModel(copy);
  assert.ok(model.states.includes('paused'));
  const dot = machineToDot(copy);
  assert.match(dot, '"paused" [id="state_paused"');
  assert.match(dot, '"idle" -> "paused" [label="recovery.started"');
  assert.match(dot, '"paused" -> "running" [label="execution.started"');
  assert.match(machineToMermaid(copy), 'idle --> paused : recovery.started');
});

test('chart - highlight marks the current state and the move just taken; an unknown state is refused with the list of states', () => {
  const dot = machineToDot(sessionMachine, { highlight: 'running', move: { from: 'claimed', event: 'execution.started' } });
  assert.match(dot, /"running" \[id="state_running", label="running", class="current"/);
  assert.is(dot.match(/class="current"/g)!.length, 1);
  assert.match(dot, /"claimed" -> "running" \[label="execution\.started", id="move_claimed_execution\.started", class="move taken"/);
  assert.is(dot.match(/move taken/g)!.length, 1);
  assert.not.match(
    machineToDot(sessionMachine, { highlight: 'running', move: { from: 'idle', event: 'execution.started' } }),
    'move taken',
    'no such move: nothing highlighted',
  );
  assert.throws(
    () => machineToDot(sessionMachine, { highlight: 'nap' }),
    /Cannot highlight state "nap": the session machine has states idle, claimed, running, recovering, settled/,
  );
});

test('chart - mermaid holds every state and move', () => {
  assert.not.match(machineToMermaid(sessionMachine), 'note right of', 'commands hidden by default');
  const mermaid = machineToMermaid(sessionMachine, { highlight: 'settled', commands: true });
  assert.match(mermaid, /^stateDiagram-v2\n/);
  assert.match(mermaid, '[*] --> idle');
  for (const s of states) assert.match(mermaid, `state "${s}" as ${s}`);
  for (const [from, event, to] of definedMoves()) assert.match(mermaid, `${from} --> ${to} : ${event}`);
  assert.match(mermaid, 'claim [ownsLiveLease] / refuse own_lease_live');
  assert.match(mermaid, 'class settled current');
});

test('chart - SVG renders offline and names every state; the highlight survives as a class', async () => {
  const svg = await renderSvg(machineToDot(sessionMachine, { highlight: 'claimed' }));
  assert.match(svg, /<svg[\s\S]*<\/svg>/);
  for (const s of states) assert.match(svg, `<title>${s}</title>`);
  assert.match(svg, 'class="node current"');
  assert.match(svg, 'execution.claimed');
});

test('cli chart - --format dot prints DOT and exits 0; --out writes a file and says so', async () => {
  const dot = await runCli(['chart', '--format', 'dot']);
  assert.is(dot.code, 0, dot.stderr);
  assert.match(dot.stdout, /^digraph "session" \{/);
  for (const s of states) assert.match(dot.stdout, `"${s}" [id="state_${s}"`);
  const tmp = tempDir();
  try {
    const out = tmp.file('chart.svg');
    const svg = await runCli(['chart', '--out', out]);
    assert.is(svg.code, 0, svg.stderr);
    assert.match(svg.stdout, `wrote the session state chart as svg to ${out}`);
    assert.match(readFileSync(out, 'utf8'), '<title>running</title>');
    const mermaid = await runCli(['chart', '--format', 'mermaid']);
    assert.match(mermaid.stdout, /^stateDiagram-v2/);
    assert.not.match(mermaid.stdout, 'refuse');
    const withCommands = await runCli(['chart', '--format', 'dot', '--commands']);
    assert.match(withCommands.stdout, 'claim [ownsLiveLease] / refuse own_lease_live');
  } finally {
    tmp.remove();
  }
});

test('cli chart - a bad --format is a usage error (exit 2) naming the formats', async () => {
  const bad = await runCli(['chart', '--format', 'png']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, '--format must be one of svg, dot, mermaid (got "png")');
  assert.is(bad.stdout, '');
});

test.run();
