/**
 * Lines about refused requests, rate-limited: one line per kind per `intervalMs`, the rest counted
 * into one summary line per window (`refused 1,234 more requests (...) in the last 10 s`); the clock
 * is injected (why: docs/operating.md#refused-requests-in-the-log).
 */
import { systemClock, type Clock } from '../clock.ts';
import { ErrorCode, SessiondError, boundText } from '../errors.ts';
import { checkKeys, wholeNumber } from '../options.ts';

/** One window: at most one line per kind of refusal, then one summary, per this many ms. */
export const DEFAULT_REFUSAL_LOG_INTERVAL_MS = 10_000;
/** Longest line written (a refusal's description is cut there, with `…(N bytes)`). */
export const DEFAULT_MAX_LOG_LINE_CHARS = 600;

export interface RefusalLogOptions {
  /** Where lines go. */
  write: (line: string) => void;
  intervalMs?: number;
  maxLineChars?: number;
  clock?: Clock;
}

export interface RefusalLog {
  /** A refused request of `kind` (e.g. `invalid_input`, `permission`): written if first of its kind in the window, else counted. */
  refused(kind: string, line: string): void;
  /** Every refusal so far, by kind (written or held back). */
  readonly counts: Readonly<Record<string, number>>;
  /** Writes the summary of what is held back and stops the window's timer. */
  close(): void;
}

const OPTIONS = ['write', 'intervalMs', 'maxLineChars', 'clock'];
const numbers = new Intl.NumberFormat('en-US');

export function createRefusalLog(options: RefusalLogOptions): RefusalLog {
  checkKeys('refusal log', options, OPTIONS);
  if (typeof options.write !== 'function') {
    throw new SessiondError(ErrorCode.InvalidOption, 'The refusal log needs write(line): a function that writes one line of the log.', {
      details: { option: 'write' },
    });
  }
  const intervalMs = wholeNumber('refusal log', 'intervalMs', options.intervalMs, DEFAULT_REFUSAL_LOG_INTERVAL_MS, 1, 'ms');
  const maxLineChars = wholeNumber('refusal log', 'maxLineChars', options.maxLineChars, DEFAULT_MAX_LOG_LINE_CHARS, 80, 'characters');
  const clock = options.clock ?? systemClock;
  const counts: Record<string, number> = {};
  /** When a line of each kind was last written. */
  const writtenAt = new Map<string, number>();
  /** The window open since `openedAt`, and the refusals held back in it, by kind. */
  let openedAt: number | undefined;
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  let held = new Map<string, number>();

  const summarise = () => {
    const total = [...held.values()].reduce((a, b) => a + b, 0);
    if (total > 0) {
      const byKind = [...held]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .map(([k, n]) => `${k} ${numbers.format(n)}`)
        .join(', ');
      options.write(`refused ${numbers.format(total)} more request${total === 1 ? '' : 's'} (${byKind}) in the last ${duration(clock.now() - openedAt!)}`);
    }
    held = new Map();
    openedAt = undefined;
    timer = undefined;
  };

  return {
    counts,
    refused(kind, line) {
      counts[kind] = (counts[kind] ?? 0) + 1;
      const now = clock.now();
      if (openedAt === undefined) {
        openedAt = now;
        timer = clock.setTimeout(summarise, intervalMs);
        (timer as { unref?: () => void }).unref?.();
      }
      const last = writtenAt.get(kind);
      if (last === undefined || now - last >= intervalMs) {
        writtenAt.set(kind, now);
        options.write(boundText(line, maxLineChars));
      } else {
        held.set(kind, (held.get(kind) ?? 0) + 1);
      }
    },
    close() {
      clock.clearTimeout(timer);
      if (openedAt !== undefined) summarise();
    },
  };
}

/** `10 s`, `1.5 s`, `300 ms`. */
function duration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}
