// The budget tables' row types (0028_budgets), part of db/schema.ts's DB.
import type { Generated, Selectable } from 'kysely';

/** A spend limit of one API key or project per UTC day or month (0028_budgets). */
export interface BudgetTable {
  id: string;
  workspace_id: string;
  scope: 'key' | 'project';
  scope_id: string;
  period: 'day' | 'month';
  limit_credits: number;
  /** Alert thresholds in percent of the limit. */
  alert_at: Generated<number[]>;
  alert_url: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** A budget's net spend in one period (the period's start, UTC). */
export interface BudgetSpendTable {
  budget_id: string;
  period_start: Date;
  spent: number;
  alerted_pct: Generated<number>;
}

/** Which budget period a job's charge counts in. */
export interface BudgetChargeTable {
  job_id: string;
  budget_id: string;
  period_start: Date;
}

export type Budget = Selectable<BudgetTable>;

/** A workspace's low-balance alert settings (0100_balance_alerts): thresholds in credits, and where `balance.low` goes. */
interface BalanceAlertTable {
  workspace_id: string;
  thresholds: number[];
  url: string | null;
  updated_at: Generated<Date>;
}

/** This file's tables, as the database interface (db/schema.ts `DB`) lists them. */
export interface BalanceAlertTables {
  balance_alerts: BalanceAlertTable;
}
