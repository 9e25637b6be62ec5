// What the cluster capacity benchmark (scripts/bench/capacity-cluster.ts) reads of the running cluster
// profile: the CPU time of every process its state directory lists, grouped by what the process is,
// and Postgres' own counters per database (pg_stat_statements when the profile's Patroni preloads it,
// pg_stat_database and pg_stat_wal always), as snapshots to subtract.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Database } from '../../db/index.js';

const USER_HZ = 100; // clock ticks per second of /proc/<pid>/stat on Linux

interface ProcStat {
  ppid: number;
  /** utime + stime, and cutime + cstime (children it waited for), in ms. */
  own: number;
  children: number;
}

function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (i: number) => (Number(f[i]) * 1000) / USER_HZ;
    return { ppid: Number(f[1]), own: ms(11) + ms(12), children: ms(13) + ms(14) };
  } catch {
    return undefined;
  }
}

function readPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]!.trim());
  return pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
}

/** A process of the profile: its name (as `up cluster` prints it), its group in the figures, its pid. */
interface ClusterProcess {
  name: string;
  group: string;
  pid: number;
  /** Postgres' postmaster: its live children's CPU counts too (backends come and go). */
  tree: boolean;
}

/**
 * Every process of the profile now running: the service processes of scripts/cluster/processes
 * (grouped by fleet: the name without its number), the Temporal services (by service), each Postgres
 * node's postmaster (primary or standby by `leader`) and Patroni, etcd, HAProxy, MinIO, the delay proxy.
 */
export function clusterProcesses(stateDir: string, processesFile: string, leader: string): ClusterProcess[] {
  const out: ClusterProcess[] = [];
  const add = (name: string, group: string, file: string, tree = false) => {
    const pid = readPid(file);
    if (pid) out.push({ name, group, pid, tree });
  };
  for (const line of readFileSync(processesFile, 'utf8').split('\n')) {
    const name = line.split(/\s+/)[0];
    if (!name || line.startsWith('#')) continue;
    add(name, name.replace(/-\d+$/, ''), join(stateDir, `${name}.pid`));
  }
  for (const svc of ['frontend-1', 'frontend-2', 'history-1', 'history-2', 'matching-1', 'matching-2', 'worker'])
    add(`temporal-${svc}`, `temporal-${svc.replace(/-\d+$/, '')}`, join(stateDir, `temporal-${svc}.pid`));
  for (const node of ['pg-1', 'pg-2']) {
    add(node, node === leader ? 'postgres primary' : 'postgres standby', join(stateDir, node, 'data', 'postmaster.pid'), true);
    add(`${node} Patroni`, 'patroni + etcd + haproxy', join(stateDir, `${node}.pid`));
  }
  add('etcd', 'patroni + etcd + haproxy', join(stateDir, 'etcd.pid'));
  add('haproxy', 'patroni + etcd + haproxy', join(stateDir, 'haproxy.pid'));
  add('minio', 'minio', join(stateDir, 'minio.pid'));
  add('delay-proxy', 'delay-proxy', join(stateDir, 'delay-proxy.pid'));
  return out;
}

/**
 * CPU ms used so far by each group: a process's own time plus that of the children it waited for
 * (a node process's ffmpeg, a postmaster's ended backends), and for a postmaster its live children's.
 * Monotonic as long as the processes live, so two snapshots subtract.
 */
export function cpuByGroup(procs: readonly ClusterProcess[]): Map<string, number> {
  const trees = procs.filter((p) => p.tree).map((p) => p.pid);
  const kids = new Map<number, number>();
  if (trees.length) {
    for (const d of readdirSync('/proc')) {
      if (!/^\d+$/.test(d)) continue;
      const s = procStat(Number(d));
      if (s && trees.includes(s.ppid)) kids.set(s.ppid, (kids.get(s.ppid) ?? 0) + s.own + s.children);
    }
  }
  const out = new Map<string, number>();
  for (const p of procs) {
    const s = procStat(p.pid);
    if (!s) throw new Error(`${p.name} (pid ${p.pid}) is gone: a process of the profile died during the benchmark`);
    out.set(p.group, (out.get(p.group) ?? 0) + s.own + s.children + (p.tree ? (kids.get(p.pid) ?? 0) : 0));
  }
  return out;
}

/** Postgres' counters for one database. */
export interface DbCounts {
  /** Top-level statements, transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT) excluded. */
  statements: number;
  /** Top-level statements with transaction control: the round trips that ran a statement. */
  roundTrips: number;
  /** Statements run inside functions (triggers): not round trips. */
  nested: number;
  /** pg_notify() and NOTIFY calls, top-level and in triggers. */
  notifies: number;
  /** pg_stat_database: xact_commit + xact_rollback. */
  transactions: number;
  /** pg_stat_database: tup_inserted + tup_updated + tup_deleted. */
  rowsWritten: number;
  /** Calls per statement (its text's first 70 characters), top-level and nested. */
  byStatement: Map<string, number>;
}

export interface PgSnapshot {
  byDb: Map<string, DbCounts>;
  walBytes: number;
}

/** Whether pg_stat_statements is preloaded on the primary; creates the extension (in `postgres`) when it is. */
export async function enableStatements(admin: Database): Promise<boolean> {
  const r = await sql<{ v: string }>`select current_setting('shared_preload_libraries') as v`.execute(admin);
  if (!/pg_stat_statements/.test(r.rows[0]!.v)) return false;
  await sql`create extension if not exists pg_stat_statements`.execute(admin);
  return true;
}

const emptyCounts = (): DbCounts => ({
  statements: 0,
  roundTrips: 0,
  nested: 0,
  notifies: 0,
  transactions: 0,
  rowsWritten: 0,
  byStatement: new Map(),
});

export async function pgSnapshot(admin: Database, withStatements: boolean): Promise<PgSnapshot> {
  const byDb = new Map<string, DbCounts>();
  const of = (db: string) => byDb.get(db) ?? byDb.set(db, emptyCounts()).get(db)!;
  const dbs = await sql<{ datname: string; xacts: string; rows: string }>`
    select datname, (xact_commit + xact_rollback)::text as xacts, (tup_inserted + tup_updated + tup_deleted)::text as rows
      from pg_stat_database where datname is not null`.execute(admin);
  for (const d of dbs.rows) {
    of(d.datname).transactions = Number(d.xacts);
    of(d.datname).rowsWritten = Number(d.rows);
  }
  if (withStatements) {
    const st = await sql<{ datname: string; toplevel: boolean; q: string; calls: string }>`
      select d.datname, s.toplevel, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 70) as q, sum(s.calls)::text as calls
        from pg_stat_statements s join pg_database d on d.oid = s.dbid
       group by 1, 2, 3`.execute(admin);
    for (const s of st.rows) {
      const c = of(s.datname);
      const calls = Number(s.calls);
      const control = /^\s*(begin|commit|rollback|start transaction|savepoint|release|end)\b/i.test(s.q);
      if (s.toplevel) {
        c.roundTrips += calls;
        if (!control) c.statements += calls;
      } else c.nested += calls;
      if (/pg_notify\s*\(|^\s*notify\b/i.test(s.q)) c.notifies += calls;
      c.byStatement.set(s.q, (c.byStatement.get(s.q) ?? 0) + calls);
    }
  }
  const wal = await sql<{ b: string }>`select wal_bytes::text as b from pg_stat_wal`.execute(admin);
  return { byDb, walBytes: Number(wal.rows[0]?.b ?? 0) };
}

/** b − a, per database (a database new in b counts from zero). */
export function pgDiff(a: PgSnapshot, b: PgSnapshot): PgSnapshot {
  const byDb = new Map<string, DbCounts>();
  for (const [db, y] of b.byDb) {
    const x = a.byDb.get(db) ?? emptyCounts();
    const byStatement = new Map<string, number>();
    for (const [q, n] of y.byStatement) {
      const d = n - (x.byStatement.get(q) ?? 0);
      if (d > 0) byStatement.set(q, d);
    }
    byDb.set(db, {
      statements: y.statements - x.statements,
      roundTrips: y.roundTrips - x.roundTrips,
      nested: y.nested - x.nested,
      notifies: y.notifies - x.notifies,
      transactions: y.transactions - x.transactions,
      rowsWritten: y.rowsWritten - x.rowsWritten,
      byStatement,
    });
  }
  return { byDb, walBytes: b.walBytes - a.walBytes };
}

/** CPU ms used so far by each client backend of the node `admin` reaches, with the database it serves. */
export async function backendCpu(admin: Database): Promise<Map<number, { db: string; ms: number }>> {
  const r = await sql<{ pid: number; datname: string }>`
    select pid, datname from pg_stat_activity where backend_type = 'client backend' and datname is not null`.execute(admin);
  const out = new Map<number, { db: string; ms: number }>();
  for (const b of r.rows) {
    const s = procStat(b.pid);
    if (s) out.set(b.pid, { db: b.datname, ms: s.own });
  }
  return out;
}

/**
 * CPU ms per database between two backend snapshots: each backend's growth (all of it for one born
 * in between). A backend that ended in between is not in it: its time shows only in the node's total.
 */
export function backendCpuDiff(a: Map<number, { db: string; ms: number }>, b: Map<number, { db: string; ms: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [pid, y] of b) {
    const x = a.get(pid);
    const d = y.ms - (x && x.db === y.db ? x.ms : 0);
    out.set(y.db, (out.get(y.db) ?? 0) + d);
  }
  return out;
}
