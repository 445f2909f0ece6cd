/**
 * Progress lines while the run goes (stderr, with the elapsed time), the figures it measured, and
 * the final table (stdout) and JSON (bench/results/latest.json plus a timestamped copy).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const started = performance.now();

/** One progress line on stderr: `[  12.3s] section: message`. */
export function say(section: string, message: string): void {
  const secs = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[${secs}s] ${section}: ${message}\n`);
}

/** Calls `fn(done)` at most every `everyMs`: for progress inside long loops. */
export function ticker(everyMs = 1000): (print: () => void) => void {
  let last = performance.now();
  return (print) => {
    const now = performance.now();
    if (now - last >= everyMs) {
      last = now;
      print();
    }
  };
}

export interface Figure {
  /** Stable key, e.g. `sqlite.log.append`. */
  key: string;
  section: string;
  figure: string;
  unit: string;
  value: number;
  /** The raw ceiling this figure is compared with, in the same unit. */
  raw?: { label: string; value: number; unit: string };
  ratio?: number;
  /** Human-readable target, e.g. ">= 0.5 x raw" or "<= 100 MB". */
  target?: string;
  holds?: boolean;
  /** What was measured exactly (sizes, conditions). */
  note?: string;
}

export interface TargetSpec {
  /** value / raw.value >= ratio */
  minRatio?: number;
  /** value / raw <= maxRatio (for costs: times, bytes) */
  maxRatio?: number;
  /** value <= max */
  max?: number;
  /** value >= min */
  min?: number;
}

export class Results {
  readonly figures: Figure[] = [];
  readonly errors: { section: string; error: string }[] = [];

  add(f: Omit<Figure, 'ratio' | 'holds' | 'target'>, spec?: TargetSpec): Figure {
    const figure: Figure = { ...f };
    if (f.raw) figure.ratio = f.value / f.raw.value;
    if (spec?.minRatio !== undefined) {
      figure.target = `>= ${spec.minRatio} x raw`;
      figure.holds = figure.ratio !== undefined && figure.ratio >= spec.minRatio;
    } else if (spec?.maxRatio !== undefined) {
      figure.target = `<= ${spec.maxRatio} x raw`;
      figure.holds = figure.ratio !== undefined && figure.ratio <= spec.maxRatio;
    } else if (spec?.max !== undefined) {
      figure.target = `<= ${fmt(spec.max)} ${f.unit}`;
      figure.holds = f.value <= spec.max;
    } else if (spec?.min !== undefined) {
      figure.target = `>= ${fmt(spec.min)} ${f.unit}`;
      figure.holds = f.value >= spec.min;
    }
    this.figures.push(figure);
    const extra = figure.raw ? ` (raw ${fmt(figure.raw.value)} ${figure.raw.unit}, ratio ${figure.ratio!.toFixed(2)})` : '';
    const verdict = figure.holds === undefined ? '' : figure.holds ? ' -- target holds' : ` -- TARGET MISSED (${figure.target})`;
    say(f.section, `${f.figure}: ${fmt(f.value)} ${f.unit}${extra}${verdict}`);
    return figure;
  }

  get(key: string): Figure | undefined {
    return this.figures.find((f) => f.key === key);
  }

  error(section: string, err: unknown): void {
    const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
    this.errors.push({ section, error: text });
    say(section, `FAILED: ${text}`);
  }
}

/** 12345.678 -> "12,346"; 12.345 -> "12.3"; 0.1234 -> "0.123". */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  const abs = Math.abs(n);
  if (abs >= 1000) return Math.round(n).toLocaleString('en-US');
  if (abs >= 100) return n.toFixed(0);
  if (abs >= 10) return n.toFixed(1);
  if (abs >= 1) return n.toFixed(2);
  return n.toPrecision(3);
}

/** The final table, as plain text (also pasted into bench/README.md). */
export function table(results: Results): string {
  const head = ['figure', 'unit', 'value', 'raw baseline', 'ratio', 'target', 'holds?'];
  const rows = results.figures.map((f) => [
    f.figure,
    f.unit,
    fmt(f.value),
    f.raw ? `${fmt(f.raw.value)} (${f.raw.label})` : '',
    f.ratio !== undefined ? f.ratio.toFixed(2) : '',
    f.target ?? '',
    f.holds === undefined ? '' : f.holds ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 2 || i === 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  const sep = `|${widths.map((w, i) => (i === 2 || i === 4 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(head), sep, ...rows.map(line)].join('\n');
}

export function writeJson(dir: string, payload: unknown, startedAt: Date): { latest: string; stamped: string } {
  mkdirSync(dir, { recursive: true });
  const text = `${JSON.stringify(payload, null, 2)}\n`;
  const stamp = startedAt
    .toISOString()
    .replaceAll(':', '-')
    .replace(/\.\d+Z$/, 'Z');
  const latest = join(dir, 'latest.json');
  const stamped = join(dir, `${stamp}.json`);
  writeFileSync(latest, text);
  writeFileSync(stamped, text);
  return { latest, stamped };
}
