/**
 * Any EventLog read through its port for `verifyLog` (what a JetStream log is verified through):
 * the whole log with `readPages`, a session with `readSession`. A stored message the codec refuses
 * is quarantined by the log (skipped, reported once to `onQuarantine`): give the log the collector's
 * handler when opening it, and each quarantined message comes back here as an undecodable item of
 * its session, in its place among the events.
 */
import type { EventLog } from '../events/event-log.ts';
import type { QuarantinedMessage } from '../events/quarantine.ts';
import type { StoredItem, StoredLog, StoredSnapshot, Undecodable } from './stored-log.ts';

export interface QuarantineCollector {
  readonly onQuarantine: (q: QuarantinedMessage) => void;
  /** Every message quarantined so far, once per position. */
  readonly messages: ReadonlyMap<number, QuarantinedMessage>;
}

export function quarantineCollector(): QuarantineCollector {
  const messages = new Map<number, QuarantinedMessage>();
  return { messages, onQuarantine: (q) => void messages.set(q.position, q) };
}

const asItem = (q: QuarantinedMessage): { undecodable: Undecodable } => ({
  undecodable: { sessionId: q.sessionId, seq: null, position: q.position, code: q.code, reason: q.message },
});

const positionOf = (item: StoredItem): number => ('event' in item ? (item.event.position ?? 0) : (item.undecodable.position ?? 0));

/** `items` with the quarantined messages among them by position (stable: an event stays before a message at its own position). */
function merge(items: StoredItem[], quarantined: QuarantinedMessage[]): StoredItem[] {
  if (quarantined.length === 0) return items;
  return [...items, ...quarantined.map(asItem)].sort((a, b) => positionOf(a) - positionOf(b));
}

export interface PortSourceOptions {
  describe: string;
  quarantine: QuarantineCollector;
  notes?: string[];
  snapshot?: (sessionId: string) => Promise<StoredSnapshot | undefined>;
  pageSize?: number;
}

export function portSource(log: EventLog, options: PortSourceOptions): StoredLog {
  const seen = new Set<number>();
  /** Quarantined messages not yet handed out by `pages`, up to `upTo` (all when undefined). */
  const fresh = (upTo?: number): QuarantinedMessage[] => {
    const out: QuarantinedMessage[] = [];
    for (const [position, q] of options.quarantine.messages) {
      if (seen.has(position) || (upTo !== undefined && position > upTo)) continue;
      seen.add(position);
      out.push(q);
    }
    return out;
  };
  return {
    describe: options.describe,
    notes: options.notes ?? [],
    problems: [],
    async *pages() {
      for await (const page of log.readPages(options.pageSize === undefined ? {} : { pageSize: options.pageSize })) {
        const items: StoredItem[] = page.map((event) => ({ event }));
        yield merge(items, fresh(page[page.length - 1]!.position));
      }
      const rest = fresh();
      if (rest.length > 0) yield merge([], rest);
    },
    async *session(sessionId) {
      const events = await log.readSession(sessionId);
      const quarantined = [...options.quarantine.messages.values()].filter((q) => q.sessionId === sessionId);
      yield merge(
        events.map((event) => ({ event })),
        quarantined,
      );
    },
    snapshot: options.snapshot ?? (async () => undefined),
    async size() {
      return log.head(); // JetStream: messages (an append of several events is one)
    },
    close: () => log.close(),
  };
}
