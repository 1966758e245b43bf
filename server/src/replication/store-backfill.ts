// What every node records in the shared store for the entries it applies (docs/replication.md):
// the version row of each record change and its tombstones (the writer's node is the first to,
// the others in case it died first), and the index's active version, guarded by log position so
// that a node that lags never sets it back. Batched off the apply path: one statement for the
// rows and their tombstones and one for the active versions, at once after a quiet interval and
// otherwise once per interval (100 ms), instead of round trips per entry on every node, which held
// up each index's entries. The writer's own statement per entry was most of PostgreSQL's work at
// 500 writes/s (D-299).
import { and, eq, type SQL, sql } from "drizzle-orm";
import type { Logger } from "../log.ts";
import { recordActiveAtMany } from "../store/active-at.ts";
import { type Db, rowsOf } from "../store/open.ts";
import { indexes, tombstones, versions } from "../store/schema.ts";
import { array } from "../store/sql-array.ts";
import { VERSION_COLUMNS as columns, type VersionInsert, versionRows } from "../store/version-rows.ts";

export type BackfillRow = VersionInsert;

/** What a change did to its ids, for the tombstones (docs/versions.md): as its writer records it. */
export interface RowEffects {
  /** Ids the change wrote: their tombstones go. */
  rewritten: string[];
  /** Ids the change deleted (or purged): each gets a tombstone. */
  deleted: string[];
}

/** Ids deleted in entries applied this recently are checked again when a later change rewrites them. */
const RECENT_DELETE_MS = 60_000;
/** At most this many of them (a bulk delete of millions must not hold them all): the oldest go. */
const MAX_RECENT_DELETES = 100_000;

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** The key of a version (or of an id) of an index in this file's maps. */
const keyOf = (indexId: string, name: string) => `${indexId}\u0000${name}`;

/** Backups pending while the store is unreachable beyond this are dropped (their writers recorded them). */
const MAX_PENDING_ROWS = 100_000;

export class StoreBackfill {
  private readonly db: Db;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private rows = new Map<string, { row: BackfillRow; effects: RowEffects }>();
  /** `index\0id` of ids deleted by entries applied here lately, and when. */
  private readonly recentDeletes = new Map<string, number>();
  private active = new Map<string, { version: string; seq: number }>();
  /** Checkpoints applied here whose row may still say pending (see checkpointApplied). */
  private checkpoints = new Map<string, { indexId: string; version: string; records: number }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> | undefined;
  /** When the last batch was started (0: none yet). */
  private startedAt = 0;

  constructor(db: Db, logger: Logger, intervalMs = 100) {
    this.db = db;
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  addRow(row: BackfillRow, effects: RowEffects = { rewritten: [], deleted: [] }): void {
    if (this.rows.size >= MAX_PENDING_ROWS) {
      const oldest = this.rows.keys().next().value!;
      this.rows.delete(oldest);
    }
    this.rows.set(keyOf(row.indexId, row.version), { row, effects });
    const now = Date.now();
    for (const id of effects.deleted) {
      // Moved to the end, so that the map stays in time order (effectValues expires from the front).
      const key = keyOf(row.indexId, id);
      this.recentDeletes.delete(key);
      this.recentDeletes.set(key, now);
      if (this.recentDeletes.size > MAX_RECENT_DELETES)
        this.recentDeletes.delete(this.recentDeletes.keys().next().value!);
    }
    this.schedule();
  }

  /** The newest activation per index wins; the store keeps whichever has the highest position. */
  setActive(indexId: string, version: string, seq: number): void {
    const known = this.active.get(indexId);
    if (known === undefined || known.seq < seq) this.active.set(indexId, { version, seq });
    this.schedule();
  }

  /**
   * A checkpoint in the log and applied: its row, which the node that built it wrote as pending,
   * is ready. Its builder marks it so itself, but may have died, or have answered its client
   * before its own node applied the entry (D-344); every node that applies it does it too.
   */
  checkpointApplied(indexId: string, version: string, records: number): void {
    this.checkpoints.set(keyOf(indexId, version), { indexId, version, records });
    this.schedule();
  }

  /** An index dropped here: nothing of it is recorded any more. */
  forget(indexId: string): void {
    this.active.delete(indexId);
    for (const [key, { row }] of this.rows) if (row.indexId === indexId) this.rows.delete(key);
    for (const [key, c] of this.checkpoints) if (c.indexId === indexId) this.checkpoints.delete(key);
  }

  /**
   * Resolves once what this node applied of the index so far is in the store: its pending rows
   * are written (with everything else pending), or a flush under way has ended. Failures are
   * kept for the next flush, as always.
   */
  async settled(indexId: string): Promise<void> {
    const pending =
      this.active.has(indexId) ||
      [...this.rows.values()].some(({ row }) => row.indexId === indexId) ||
      [...this.checkpoints.values()].some((c) => c.indexId === indexId);
    if (pending || this.flushing !== undefined) await this.flush();
  }

  /** Writes what is pending now (and waits for a flush under way). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing !== undefined) await this.flushing;
    if (!this.rows.size && !this.active.size && !this.checkpoints.size) return;
    this.flushing = this.write().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  /**
   * An entry was applied (its rows and active version given): written at once when no batch
   * started within the interval, so that a write on a quiet index is in the store within
   * milliseconds (what GET /v1/regions counts lag against, D-278); otherwise with the next batch.
   */
  applied(): void {
    if (this.flushing !== undefined || Date.now() - this.startedAt < this.intervalMs) return;
    if (!this.rows.size && !this.active.size && !this.checkpoints.size) return;
    void this.flush();
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.intervalMs);
  }

  private async write(): Promise<void> {
    this.startedAt = Date.now();
    // In one order everywhere (index, then version): every node's batch and every writer insert
    // overlapping rows, and statements that take the same row locks in different orders deadlock.
    const pending = [...this.rows.values()].sort(
      (a, b) => compare(a.row.indexId, b.row.indexId) || a.row.major - b.row.major || a.row.minor - b.row.minor,
    );
    const rows = pending.map((p) => p.row);
    const active = [...this.active.entries()].sort(([a], [b]) => compare(a, b));
    const checkpoints = [...this.checkpoints.values()];
    this.rows = new Map();
    this.active = new Map();
    this.checkpoints = new Map();
    // Side by side: the rows statement and the active versions' touch different rows, and a
    // reader of GET /v1/regions right after a write on a quiet index should not wait for both.
    const recordRows = async () => {
      if (!rows.length) return;
      // An index deleted meanwhile has no row to refer to: those rows are skipped, not an error.
      const insert = sql`insert into ${versions} (${columns}) select ${columns}
          from ${versionRows(rows)}
          where exists (select 1 from ${indexes} i where i.id = v.index_id)
          order by index_id, major, minor
          on conflict do nothing`;
      const effects = this.effectValues(pending);
      await this.db.execute(effects === undefined ? insert : withTombstones(insert, effects));
    };
    // One statement that waits for no lock: a row another node's flush or a writer holds is
    // tried again with the next flush (D-285). In a transaction of one update per index, every
    // node's flush waited for the others' in turn at 500 writes/s.
    const recordActive = async () => {
      if (!active.length) return;
      const held = await this.db.execute(
        recordActiveAtMany(active.map(([indexId, a]) => ({ indexId, version: a.version, seq: a.seq }))),
      );
      const again = new Set(rowsOf<{ id: string }>(held).map((r) => r.id));
      for (const [id, a] of active) if (again.has(id)) this.setActive(id, a.version, a.seq);
    };
    // Rare (a checkpoint per SIFT_COALESCE_AFTER writes of an index): one statement each, only
    // where the row still says pending (its builder may have marked it, with when it went live).
    const recordCheckpoints = async () => {
      for (const c of checkpoints) {
        await this.db
          .update(versions)
          .set({ state: "ready", records: c.records })
          .where(and(eq(versions.indexId, c.indexId), eq(versions.version, c.version), eq(versions.state, "pending")));
      }
    };
    try {
      const [r, a] = await Promise.allSettled([recordRows(), recordActive()]);
      if (r.status === "rejected") throw r.reason;
      if (a.status === "rejected") throw a.reason;
      await recordCheckpoints();
    } catch (error) {
      // Kept for the next flush (newer entries win); the store may be briefly unreachable.
      for (const p of pending) {
        const key = keyOf(p.row.indexId, p.row.version);
        if (!this.rows.has(key)) this.rows.set(key, p);
      }
      for (const [id, a] of active) this.setActive(id, a.version, a.seq);
      for (const c of checkpoints) {
        const key = keyOf(c.indexId, c.version);
        if (!this.checkpoints.has(key)) this.checkpoints.set(key, c);
      }
      this.logger.warn("could not record applied versions in the store; trying again", {
        rows: rows.length,
        error: (error as Error).message,
      });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      this.schedule();
    }
  }

  /**
   * What the batch did to each id, the last change of the batch winning (an id rewritten, then
   * deleted, is deleted): as the relation withTombstones reads, or nothing when no change touched an
   * id. A rewrite is marked `heal` when the id was deleted by an entry applied here lately: its
   * writer removed the id's tombstone, but a batch here may have recorded that delete's tombstone
   * after it, for a writer that died (see withTombstones).
   */
  private effectValues(pending: { row: BackfillRow; effects: RowEffects }[]): SQL | undefined {
    const now = Date.now();
    for (const [key, at] of this.recentDeletes) {
      if (now - at <= RECENT_DELETE_MS) break;
      this.recentDeletes.delete(key);
    }
    const last = new Map<string, { row: BackfillRow; deleted: boolean }>();
    for (const { row, effects } of pending) {
      for (const id of effects.rewritten) last.set(keyOf(row.indexId, id), { row, deleted: false });
      for (const id of effects.deleted) last.set(keyOf(row.indexId, id), { row, deleted: true });
    }
    if (last.size === 0) return undefined;
    // In (index, id) order: every node's batch takes the tombstones' row locks in the same order.
    const sorted = [...last].sort(([a], [b]) => compare(a, b));
    const column = <T>(pick: (key: string, effect: { row: BackfillRow; deleted: boolean }) => T) =>
      array(sorted.map(([key, effect]) => pick(key, effect)));
    // Flags as 0 and 1: a boolean array parameter is sent as a boolean when not prepared.
    return sql`select index_id, record_id, version, major, minor, deleted = 1 as deleted, heal = 1 as heal, created_at
      from unnest(${column((_, { row }) => row.indexId)}::text[],
        ${column((key, { row }) => key.slice(row.indexId.length + 1))}::text[], ${column((_, { row }) => row.version)}::text[],
        ${column((_, { row }) => row.major)}::int[], ${column((_, { row }) => row.minor)}::int[],
        ${column((_, { deleted }) => (deleted ? 1 : 0))}::int[],
        ${column((key, { deleted }) => (!deleted && this.recentDeletes.has(key) ? 1 : 0))}::int[],
        ${column((_, { row }) => row.createdAt)}::bigint[])
      as e(index_id, record_id, version, major, minor, deleted, heal, created_at)`;
  }
}

/** A version id's (major, minor) as a row value, to order tombstones by the versions that made them. */
const versionOrder = (column: SQL) =>
  sql`(split_part(${column}, '.', 1)::int, coalesce(nullif(split_part(${column}, '.', 2), ''), '0')::int)`;

/**
 * The version rows' insert, and the tombstones of the changes it inserted (their writers did not
 * record them): as the writer would have, in the same statement (atomic, retried as a whole).
 * Ordered by version, not by time, so that a tombstone older than a rewrite goes whoever wrote it.
 * A rewrite marked `heal` removes an older tombstone even when its own row was recorded by its
 * writer: a dead writer's delete recorded here after that rewrite had been recorded must not stay.
 */
function withTombstones(insert: SQL, effects: SQL): SQL {
  const t = sql.raw("t");
  return sql`with ins as (${insert} returning index_id, version),
    e as (${effects}),
    _r as (delete from ${tombstones} t using e
      where not e.deleted and t.index_id = e.index_id and t.record_id = e.record_id
        and (e.heal or exists (select 1 from ins where ins.index_id = e.index_id and ins.version = e.version))
        and ${versionOrder(sql`${t}.version`)} < (e.major, e.minor)
      returning 1),
    _d as (insert into ${tombstones} (index_id, record_id, version, created_at)
      select e.index_id, e.record_id, e.version, e.created_at
      from e join ins on ins.index_id = e.index_id and ins.version = e.version
      where e.deleted
      order by e.index_id, e.record_id
      on conflict (index_id, record_id) do update set version = excluded.version, created_at = excluded.created_at
        where ${versionOrder(sql`${tombstones}.version`)} < ${versionOrder(sql.raw("excluded.version"))}
      returning 1)
    select 1`;
}
