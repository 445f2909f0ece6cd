/**
 * An export file (`sessiond export`) read for `verifyLog`: every frame decoded on its own, a frame
 * that does not decode kept as an undecodable event of its session (the frame's own session and
 * sequence, when its map has them) or, without a session, as a problem of the file. Positions are
 * frame numbers (the format stores none). The file is read once and held in memory by session.
 */
import { CorruptExportError, isSessiondError } from '../errors.ts';
import { unpack } from '../events/codec.ts';
import { readExport } from '../export/export-file.ts';
import type { LogProblem, StoredItem, StoredLog } from './stored-log.ts';

/** The session and seq a frame names, if it is a map that has them. */
function frameKeys(body: Uint8Array): { sessionId?: string; seq?: number } {
  try {
    const f = unpack(body) as Record<string, unknown> | null;
    if (f === null || typeof f !== 'object') return {};
    return {
      ...(typeof f.sessionId === 'string' && f.sessionId.length > 0 ? { sessionId: f.sessionId } : {}),
      ...(Number.isInteger(f.seq) ? { seq: f.seq as number } : {}),
    };
  } catch {
    return {};
  }
}

export async function exportSource(file: string): Promise<StoredLog> {
  const bySession = new Map<string, StoredItem[]>();
  const ordered: StoredItem[] = [];
  const problems: LogProblem[] = [];
  const bad = new Set<number>();
  let frame = 0;
  const add = (sessionId: string, item: StoredItem) => {
    let list = bySession.get(sessionId);
    if (!list) bySession.set(sessionId, (list = []));
    list.push(item);
    ordered.push(item);
  };
  try {
    await readExport(file, {
      onEvents: (events) => {
        for (const e of events) {
          do frame++;
          while (bad.has(frame)); // frames skipped as undecodable keep their numbers
          add(e.sessionId, { event: { ...e, position: frame } });
        }
      },
      onUndecodable: (damage, body) => {
        bad.add(damage.frame);
        const { sessionId, seq } = frameKeys(body);
        const reason = damage.message;
        if (sessionId === undefined) problems.push({ kind: 'undecodable', reason: `${reason} It names no session.` });
        else add(sessionId, { undecodable: { sessionId, seq: seq ?? null, position: damage.frame, code: damage.code, reason } });
      },
    });
  } catch (err) {
    if (!(err instanceof CorruptExportError) && !(isSessiondError(err) && err.code === 'decode_failed')) throw err;
    problems.push({ kind: 'undecodable', reason: `${err.message} Nothing after it could be read.` });
  }
  return {
    describe: file,
    evidence: true,
    notes: [`read the export file ${file} (the whole file, in memory)`],
    problems,
    async *pages() {
      for (let i = 0; i < ordered.length; i += 1000) yield ordered.slice(i, i + 1000);
    },
    async *session(sessionId) {
      yield bySession.get(sessionId) ?? []; // in the file's order (commit order), as JetStream gives a session
    },
    snapshot: async () => undefined,
    size: async () => ordered.length,
    close: async () => undefined,
  };
}
