/**
 * `sessiond chart`: prints the session machine's state chart, generated from the machine itself,
 * as SVG (Graphviz, offline), DOT or Mermaid, to stdout or to a file: states and committed-event
 * moves, and with --commands each state's commands with their guards and refusals.
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { sessionMachine } from '../../machines/session-machine.ts';
import { machineToDot, machineToMermaid, renderSvg } from '../../inspector/chart.ts';
import type { CliContext } from '../context.ts';
import { oneOf } from '../options.ts';

export const CHART_FORMATS = ['svg', 'dot', 'mermaid'] as const;
export type ChartFormat = (typeof CHART_FORMATS)[number];

interface ChartOptions {
  format: ChartFormat;
  out?: string;
  commands?: boolean;
}

export async function chartText(format: ChartFormat, commands = false): Promise<string> {
  switch (format) {
    case 'dot':
      return machineToDot(sessionMachine, { commands });
    case 'mermaid':
      return machineToMermaid(sessionMachine, { commands });
    case 'svg':
      return renderSvg(machineToDot(sessionMachine, { commands }));
  }
}

export function registerChart(program: Command, ctx: CliContext): void {
  program
    .command('chart')
    .description("print the session machine's state chart (generated from the machine definition)")
    .option('--format <svg|dot|mermaid>', 'output format', oneOf('--format', CHART_FORMATS), 'svg')
    .option('--out <file>', 'write to this file instead of stdout')
    .option('--commands', 'also draw the commands each state decides, with their guards and refusals')
    .action(async (opts: ChartOptions) => {
      const text = await chartText(opts.format, opts.commands ?? false);
      if (opts.out === undefined) {
        process.stdout.write(text);
        return;
      }
      writeFileSync(opts.out, text);
      ctx.out(`wrote the session state chart${opts.commands ? ' with commands' : ''} as ${opts.format} to ${opts.out} (${Buffer.byteLength(text)} bytes)`);
    });
}
