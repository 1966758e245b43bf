// What every node records in the shared store for the entries it applies (docs/replication.md):
// the version row of each record change, in case its writer died before recording it, and the
// index's active version, guarded by log position so that a node that lags never sets it back.
// Batched off the apply path: one statement for a batch of rows and one for the active versions,
// instead of two round trips per entry on every node, which held up each index's entries.
import { sql } from "drizzle-orm";
import type { Logger } from "../log.ts";
import type { Db } from "../store/open.ts";
import { indexes, versions } from "../store/schema.ts";
import { VERSION_COLUMNS as columns, type VersionInsert, versionValues } from "../store/version-rows.ts";

export type BackfillRow = VersionInsert;

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Backups pending while the store is unreachable beyond this are dropped (their writers recorded them). */
const MAX_PENDING_ROWS = 100_000;

export class StoreBackfill {
  private readonly db: Db;
  private readonly logger: Logger;
  private readonly intervalMs: number;
  private rows = new Map<string, BackfillRow>();
  private active = new Map<string, { version: string; seq: number }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushing: Promise<void> | undefined;

  constructor(db: Db, logger: Logger, intervalMs = 100) {
    this.db = db;
    this.logger = logger;
    this.intervalMs = intervalMs;
  }

  addRow(row: BackfillRow): void {
    if (this.rows.size >= MAX_PENDING_ROWS) {
      const oldest = this.rows.keys().next().value!;
      this.rows.delete(oldest);
    }
    this.rows.set(`${row.indexId}\u0000${row.version}`, row);
    this.schedule();
  }

  /** The newest activation per index wins; the store keeps whichever has the highest position. */
  setActive(indexId: string, version: string, seq: number): void {
    const known = this.active.get(indexId);
    if (known === undefined || known.seq < seq) this.active.set(indexId, { version, seq });
    this.schedule();
  }

  /** An index dropped here: nothing of it is recorded any more. */
  forget(indexId: string): void {
    this.active.delete(indexId);
    for (const [key, row] of this.rows) if (row.indexId === indexId) this.rows.delete(key);
  }

  /** Writes what is pending now (and waits for a flush under way). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing !== undefined) await this.flushing;
    if (!this.rows.size && !this.active.size) return;
    this.flushing = this.write().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private schedule(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.intervalMs);
  }

  private async write(): Promise<void> {
    // In one order everywhere (index, then version): every node's batch and every writer insert
    // overlapping rows, and statements that take the same row locks in different orders deadlock.
    const rows = [...this.rows.values()].sort(
      (a, b) => compare(a.indexId, b.indexId) || a.major - b.major || a.minor - b.minor,
    );
    const active = [...this.active.entries()].sort(([a], [b]) => compare(a, b));
    this.rows = new Map();
    this.active = new Map();
    try {
      if (rows.length) {
        // An index deleted meanwhile has no row to refer to: those rows are skipped, not an error.
        const values = versionValues(rows);
        await this.db.execute(
          sql`insert into ${versions} (${columns}) select ${columns}
            from (values ${values}) as v(${columns})
            where exists (select 1 from ${indexes} i where i.id = v.index_id)
            order by index_id, major, minor
            on conflict do nothing`,
        );
      }
      // One row per statement: a join would lock the rows in whatever order it picks. In one
      // transaction (the rows locked in id order, as every node's flush locks them): one commit
      // and its fsync instead of one per index, every 100 ms on every node.
      if (active.length) {
        await this.db.transaction(async (tx) => {
          for (const [id, a] of active) {
            await tx.execute(
              sql`update ${indexes} set active_version = ${a.version}, log_seq = ${a.seq}::bigint
                where id = ${id} and log_seq < ${a.seq}::bigint`,
            );
          }
        });
      }
    } catch (error) {
      // Kept for the next flush (newer entries win); the store may be briefly unreachable.
      for (const r of rows) {
        const key = `${r.indexId}\u0000${r.version}`;
        if (!this.rows.has(key)) this.rows.set(key, r);
      }
      for (const [id, a] of active) this.setActive(id, a.version, a.seq);
      this.logger.warn("could not record applied versions in the store; trying again", {
        rows: rows.length,
        error: (error as Error).message,
      });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      this.schedule();
    }
  }
}
