import type { Migration } from '../migration.ts';

/**
 * Prompts of parts (text, images, files, JSON): `parts` holds them as JSON text, and `prompt` their
 * text form (src/events/prompt.ts `promptText`); NULL for a string prompt, which `prompt` holds as it
 * was. Earlier rows are all string prompts: nothing to refold.
 */
export const migration012: Migration = {
  version: 12,
  name: 'prompt_parts',
  up: `
    ALTER TABLE session_input ADD COLUMN parts TEXT;
  `,
};
