/**
 * What a turn's text streamed and has not recorded yet (pure bookkeeping, no I/O): the run context
 * feeds it live deltas and takes `text.streamed` records at the durability boundary, at most
 * `STREAM_RECORD_MS` after a delta (why: docs/architecture.md#recovery).
 */
import type { ProtoEvent } from '../machines/commands.ts';

/** The longest streamed text waits before it is recorded (a durable write of the turn records it sooner). */
export const STREAM_RECORD_MS = 1_000;
/** UTF-8 bytes of streamed text one record takes at most (what stays is taken by the next): an append stays under a NATS message. */
export const STREAM_RECORD_BYTES = 192 * 1024;

interface Part {
  messageId: string;
  /** Streamed since the last record. */
  pending: string;
  /** The next record starts the part's text again (its first record, or the first after a retried request). */
  restart: boolean;
  /** Something to record: text, or a restart of text recorded before. */
  dirty: boolean;
  /** Some of the part's text is in the log. */
  recorded: boolean;
}

export class StreamRecorder {
  private readonly parts = new Map<string, Part>();
  private dirtyParts = 0;

  constructor(private readonly executionId: string) {}

  /** Something streamed is not recorded yet. */
  get dirty(): boolean {
    return this.dirtyParts > 0;
  }

  /** Text streamed for a part of an open step; true when nothing was waiting to be recorded before (the caller arms its timer). */
  streamed(messageId: string, partId: string, text: string): boolean {
    if (text.length === 0) return false;
    let part = this.parts.get(partId);
    if (!part) {
      part = { messageId, pending: '', restart: true, dirty: false, recorded: false };
      this.parts.set(partId, part);
    }
    part.pending += text;
    return this.markDirty(part);
  }

  /** A model request of the message is sent again: its parts stream from their start, so each starts over at its next record. True as `streamed`. */
  restart(messageId: string): boolean {
    let armed = false;
    for (const part of this.parts.values()) {
      if (part.messageId !== messageId) continue;
      part.pending = '';
      part.restart = true;
      if (part.recorded) armed = this.markDirty(part) || armed;
      else this.markClean(part);
    }
    return armed;
  }

  /** The part's final text is recorded (`text.completed`): what streamed of it is not. */
  completed(partId: string): void {
    const part = this.parts.get(partId);
    if (!part) return;
    this.markClean(part);
    this.parts.delete(partId);
  }

  /** The step ended (or failed): its parts stream no more. */
  ended(messageId: string): void {
    for (const [partId, part] of this.parts) {
      if (part.messageId !== messageId) continue;
      this.markClean(part);
      this.parts.delete(partId);
    }
  }

  /**
   * The records of what streamed since the last call, in the order the parts first streamed: at most
   * `budget` UTF-8 bytes of text (counted as 3 a UTF-16 unit); what is left stays dirty.
   */
  take(budget = STREAM_RECORD_BYTES): ProtoEvent[] {
    const out: ProtoEvent[] = [];
    let units = Math.floor(budget / 3);
    for (const [partId, part] of this.parts) {
      if (!part.dirty) continue;
      if (units < 1 && part.pending.length > 0) break;
      const piece = cut(part.pending, units);
      if (piece.length === 0 && part.pending.length > 0 && !part.restart) break;
      units -= piece.length;
      out.push({
        type: 'text.streamed',
        payload: { executionId: this.executionId, messageId: part.messageId, partId, text: piece, restart: part.restart },
      });
      part.pending = part.pending.slice(piece.length);
      part.restart = false;
      part.recorded = true;
      if (part.pending.length === 0) this.markClean(part);
    }
    return out;
  }

  private markDirty(part: Part): boolean {
    if (part.dirty) return false;
    part.dirty = true;
    return ++this.dirtyParts === 1;
  }

  private markClean(part: Part): void {
    if (!part.dirty) return;
    part.dirty = false;
    this.dirtyParts--;
  }
}

/** The first `units` UTF-16 units of `text`, never splitting a surrogate pair (a lone half would not read back). */
function cut(text: string, units: number): string {
  if (text.length <= units) return text;
  let n = Math.max(0, units);
  const code = text.charCodeAt(n - 1);
  if (n > 0 && code >= 0xd800 && code <= 0xdbff) n--;
  return text.slice(0, n);
}
