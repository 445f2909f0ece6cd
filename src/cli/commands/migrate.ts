import type { Command } from 'commander';
import { openDatabase } from '../../storage/sqlite/database.ts';
import { migrate } from '../../storage/sqlite/migrate.ts';
import type { CliContext } from '../context.ts';
import { migrationProgress, progress } from '../progress.ts';

export function registerMigrate(program: Command, ctx: CliContext): void {
  program
    .command('migrate')
    .description('create or upgrade a database and print the schema version it reached')
    .option('--db <file>', 'SQLite database file', ctx.defaultDb)
    .action((opts: { db: string }) => {
      const db = openDatabase(opts.db);
      try {
        // a long data migration (a large file) shows how far it got
        const shown = migrationProgress((label, total) => progress(ctx, `upgrading to ${label}`, 'rows', total));
        const result = migrate(db, { onProgress: shown.onProgress });
        shown.stop();
        if (result.applied.length === 0) {
          ctx.out(`${opts.db}: schema is at version ${result.to}, nothing to do`);
        } else {
          for (const m of result.applied) ctx.out(`applied migration ${m.version} (${m.name})`);
          ctx.out(`${opts.db}: schema upgraded from version ${result.from} to ${result.to}`);
        }
      } finally {
        db.close();
      }
    });
}
