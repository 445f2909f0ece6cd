/**
 * The committed databases of every earlier schema version (test/fixtures/schema/vNN.sql, written by
 * scripts/fixtures/make-schema-fixtures.ts): listed, and loaded into a database file.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';

export const SCHEMA_FIXTURES_DIR = fileURLToPath(new URL('../fixtures/schema', import.meta.url));

export interface SchemaFixture {
  version: number;
  file: string;
}

/** Every committed fixture, by schema version. */
export function schemaFixtures(): SchemaFixture[] {
  return readdirSync(SCHEMA_FIXTURES_DIR)
    .filter((f) => /^v\d+\.sql$/.test(f))
    .map((f) => ({ version: Number(f.slice(1, -4)), file: join(SCHEMA_FIXTURES_DIR, f) }))
    .sort((a, b) => a.version - b.version);
}

/** A new database at `file` holding the fixture (open; the caller closes it). */
export function loadSchemaFixture(fixture: SchemaFixture, file: string): Db {
  const db = openDatabase(file);
  db.exec(readFileSync(fixture.file, 'utf8'));
  return db;
}
