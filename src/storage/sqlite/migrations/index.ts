import type { Migration } from '../migration.ts';
import { migration001 } from './001_event_log.ts';
import { migration002 } from './002_inputs_recovery.ts';
import { migration003 } from './003_session_scoped_ids.ts';
import { migration004 } from './004_quarantine.ts';
import { migration005 } from './005_pending_inputs.ts';
import { migration006 } from './006_session_snapshots.ts';
import { migration007 } from './007_recovery_session_index.ts';
import { migration008 } from './008_event_commit_time.ts';
import { migration009 } from './009_dropped_inputs.ts';
import { migration010 } from './010_waits.ts';
import { migration011 } from './011_session_list.ts';
import { migration012 } from './012_prompt_parts.ts';
import { migration013 } from './013_session_deletions.ts';
import { migration014 } from './014_session_owner.ts';
import { migration015 } from './015_capacity_state.ts';
import { migration016 } from './016_tenant_budgets.ts';
import { migration017 } from './017_session_called_by.ts';
import { migration018 } from './018_blobs.ts';
import { migration019 } from './019_inspector_index.ts';
import { migration020 } from './020_session_blobs.ts';
import { migration021 } from './021_inspector_follow.ts';
import { migration022 } from './022_event_batches.ts';

/** Every migration this build knows, in order. Append only: never edit a shipped migration. */
export const migrations: readonly Migration[] = [
  migration001,
  migration002,
  migration003,
  migration004,
  migration005,
  migration006,
  migration007,
  migration008,
  migration009,
  migration010,
  migration011,
  migration012,
  migration013,
  migration014,
  migration015,
  migration016,
  migration017,
  migration018,
  migration019,
  migration020,
  migration021,
  migration022,
];
export const LATEST_SCHEMA_VERSION = migrations.length;
