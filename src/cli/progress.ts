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
  const lines = progressLines(ctx.err, label, unit, total);
  return {
    update: lines.update,
    stop(summary) {
      if (summary) ctx.out(summary);
    },
  };
}

/** Progress as plain lines, one at each new tenth (0% first), with rate and ETA: for logs and a worker's start-up. */
export function progressLines(line: (text: string) => void, label: string, unit: string, total: number): Progress {
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
        line(`${label}: ${done}/${max} ${unit} (${tenth * 10}%), ${rate} ${unit}/s, ETA ${eta} s`);
      }
    },
    stop() {},
  };
}

/**
 * `migrate`'s `onProgress` as one progress per migration, each opened by `open` with a label
 * (`schema 22 (event_batches)`) and its row count; `stop()` ends the last one.
 */
export function migrationProgress(open: (label: string, total: number) => Progress) {
  let current: { version: number; progress: Progress } | undefined;
  return {
    onProgress(m: { version: number; name: string }, done: number, total: number) {
      if (current?.version !== m.version) {
        current?.progress.stop();
        current = { version: m.version, progress: open(`schema ${m.version} (${m.name})`, total) };
      }
      current.progress.update(done, total);
    },
    stop() {
      current?.progress.stop();
    },
  };
}
