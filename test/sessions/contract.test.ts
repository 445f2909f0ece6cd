/**
 * The `Sessions` contract on each implementation: the engine (turns here), a SQLite log at rest
 * with a worker (`startSessiond`) watching the same file, and the NATS client with a worker behind
 * the command service.
 */
import { openEngine } from '../../src/engine.ts';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import type { Sessions } from '../../src/sessions/sessions.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { sessionsContract } from '../../src/testing/sessions-contract.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { natsWorld, type NatsWorld } from '../nats/helpers.ts';

/** Polls status until the session's turn has run everything pending and settled. */
const settledBy = (sessions: Sessions) => (id: string) =>
  waitFor(
    async () => {
      const s = await sessions.status(id);
      return s.state === 'settled' && s.pendingCount === 0 && s.owner === null;
    },
    { timeoutMs: 15_000, what: 'the session settled' },
  );

sessionsContract('engine', async () => {
  const tmp = tempDir('sessiond-sessions-');
  const engine = await openEngine({ file: tmp.file('engine.db'), runner: echoRunner() });
  return {
    sessions: engine,
    settle: (id) => engine.awaitIdle(id),
    cleanup: async () => {
      await engine.close();
      tmp.remove();
    },
  };
}).run();

sessionsContract('log at rest, a worker on the same file', async () => {
  const tmp = tempDir('sessiond-sessions-');
  const file = tmp.file('shared.db');
  const worker = await startSessiond({ db: file, runner: echoRunner(), report: { out: () => undefined, err: () => undefined } });
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const sessions = logSessions(log, {
    projection: db,
    onClose: async () => {
      await log.close();
      db.close();
    },
  });
  return {
    sessions,
    wakeRuns: false,
    settle: settledBy(sessions),
    cleanup: async () => {
      await sessions.close();
      await worker.close();
      tmp.remove();
    },
  };
}).run();

let world: NatsWorld | undefined;
const overNats = sessionsContract('NATS client, a worker behind the command service', async () => {
  world ??= await natsWorld();
  const { engine } = await world.engine();
  await world.serve(engine);
  const client = await world.client();
  return {
    sessions: client,
    settle: settledBy(client),
    cleanup: () => world!.reset(),
  };
});
overNats.after(async () => {
  await world?.dispose();
});
overNats.run();
