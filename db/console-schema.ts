import type { Generated } from 'kysely';

/** A console browser session (0130_console_sessions): the hash of its cookie's id, and the key it stands for. */
interface ConsoleSessionTable {
  id_hash: string;
  api_key_id: string;
  created_at: Generated<Date>;
  expires_at: Date;
}

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface ConsoleTables {
  console_sessions: ConsoleSessionTable;
}
