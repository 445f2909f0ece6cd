/**
 * Progress for long work (export, replay, rebuild): a bar with rate and ETA on a terminal
 * (cli-progress, on stderr), plain lines every 10% otherwise, so logs stay readable.
 */
import cliProgress from 'cli-progress';
import type { CliContext } from './context.ts';

export interface Progress {
  update(done: number, total?: number): void;
  stop(summary?: string): void;
}

export function progress(ctx: CliContext, label: string, unit: string, total: number): Progress {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {rate} ${unit}/s | ETA {eta_formatted}`,
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    const started = performance.now();
    bar.start(Math.max(total, 1), 0, { rate: 0 });
    return {
      update(done, t) {
        if (t !== undefined) bar.setTotal(Math.max(t, 1));
        const secs = (performance.now() - started) / 1000;
        bar.update(done, { rate: secs > 0 ? Math.round(done / secs) : 0 });
      },
      stop(summary) {
        bar.stop();
        if (summary) ctx.out(summary);
      },
    };
  }
  let lastTenth = -1;
  let max = total;
  const started = performance.now();
  return {
    update(done, t) {
      if (t !== undefined) max = t;
      const tenth = max > 0 ? Math.floor((done / max) * 10) : 0;
      if (tenth > lastTenth && tenth < 10) {
        lastTenth = tenth;
        const secs = (performance.now() - started) / 1000;
        const rate = secs > 0 ? Math.round(done / secs) : 0;
        const eta = rate > 0 ? Math.round((max - done) / rate) : 0;
        ctx.err(`${label}: ${done}/${max} ${unit} (${tenth * 10}%), ${rate} ${unit}/s, ETA ${eta} s`);
      }
    },
    stop(summary) {
      if (summary) ctx.out(summary);
    },
  };
}
