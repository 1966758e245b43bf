// The engine's durable bookkeeping in SQLite (node:sqlite, WAL): which indexes and major segments
// exist, and the log of record changes (one row per minor version). A row committed here survives
// kill -9; a segment directory without a row is debris from an interrupted build. Alone, a commit
// is synced to disk before it counts (synchronous=FULL): it is the acknowledgement, and survives
// power loss too. With replication the change log is the durable record and this one is rebuilt
// from it: commits reach the disk at `sync()` instead (D-292).
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { ChangeLogWriter } from "./change-log-writer.ts";

export interface MajorRow {
  major: number;
  parent: string | null;
  records: number;
  dir: string;
}

export interface ChangeRow {
  version: string;
  parent: string;
  records: number;
  body: string;
}

export interface CatalogOptions {
  /**
   * Whether each commit waits for the disk (default). Off where another durable log holds every
   * change and the caller calls `sync()` before it records a position past them (replication):
   * record changes are then committed on the caller's thread, without a flush, and reach the
   * disk at the next `sync()`, or within SYNC_SOON_MS.
   */
  syncEachCommit?: boolean;
}

/** Unsynced commits are flushed at most this long after they were made, whoever asks. */
const SYNC_SOON_MS = 1_000;
/**
 * Without a flush per commit, change rows go into one transaction committed this long after its
 * first row (or before anything else that writes, and at `sync()`): a transaction per change cost
 * each node about 30 µs of CPU per write, its lock and write-ahead-log frames, against 10 µs when
 * ten share one (D-392).
 */
const COMMIT_AFTER_MS = 10;

export class Catalog {
  private readonly db: DatabaseSync;
  private readonly statements: Record<string, StatementSync>;
  /**
   * Record changes are appended from a worker thread: their commit's fsync stays off the event
   * loop. Without a flush per commit, the thread flushes the catalog when asked.
   */
  private readonly changeLog: ChangeLogWriter;
  private readonly syncEachCommit: boolean;
  private syncTimer: ReturnType<typeof setTimeout> | undefined;
  /** The transaction change rows are added to, while one is open (COMMIT_AFTER_MS). */
  private commitTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Why a commit of change rows failed: every `sync()` from then on fails with it, so that the
   * replica's position is never saved past rows this file lacks (a restart replays them).
   */
  private commitError: Error | undefined;

  constructor(file: string, options: CatalogOptions = {}) {
    this.syncEachCommit = options.syncEachCommit ?? true;
    this.db = new DatabaseSync(file);
    this.db.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = ${this.syncEachCommit ? "FULL" : "NORMAL"};
      -- Freed space is zeroed, so a purged record's bytes do not linger in free pages
      -- (docs/versions.md, Erasure).
      PRAGMA secure_delete = ON;
      -- The change log's thread writes on a connection of its own.
      PRAGMA busy_timeout = 10000;
      CREATE TABLE IF NOT EXISTS indexes (index_key TEXT PRIMARY KEY);
      CREATE TABLE IF NOT EXISTS majors (
        index_key TEXT NOT NULL, major INTEGER NOT NULL, parent TEXT, records INTEGER NOT NULL, dir TEXT NOT NULL,
        PRIMARY KEY (index_key, major));
      CREATE TABLE IF NOT EXISTS changes (
        index_key TEXT NOT NULL, version TEXT NOT NULL, major INTEGER NOT NULL, parent TEXT NOT NULL,
        records INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (index_key, version));
    `);
    // The change log's thread checkpoints instead (change-log-worker.ts): here, on the server's
    // thread, a checkpoint's flushes would hold every request.
    if (!this.syncEachCommit) this.db.exec("PRAGMA wal_autocheckpoint = 0");
    // Started once the tables exist.
    this.changeLog = new ChangeLogWriter(file);
    const prepare = (sql: string) => this.db.prepare(sql);
    this.statements = {
      indexes: prepare("SELECT index_key FROM indexes"),
      addIndex: prepare("INSERT OR IGNORE INTO indexes (index_key) VALUES (?)"),
      removeIndex: prepare("DELETE FROM indexes WHERE index_key = ?"),
      removeIndexMajors: prepare("DELETE FROM majors WHERE index_key = ?"),
      removeIndexChanges: prepare("DELETE FROM changes WHERE index_key = ?"),
      majors: prepare("SELECT major, parent, records, dir FROM majors WHERE index_key = ?"),
      addMajor: prepare("INSERT INTO majors (index_key, major, parent, records, dir) VALUES (?, ?, ?, ?, ?)"),
      removeMajor: prepare("DELETE FROM majors WHERE index_key = ? AND major = ?"),
      removeMajorChanges: prepare("DELETE FROM changes WHERE index_key = ? AND major = ?"),
      changes: prepare("SELECT version, parent, records, body FROM changes WHERE index_key = ?"),
      removeChange: prepare("DELETE FROM changes WHERE index_key = ? AND version = ?"),
      setMajor: prepare("UPDATE majors SET dir = ?, records = ? WHERE index_key = ? AND major = ?"),
      setChange: prepare("UPDATE changes SET body = ?, records = ? WHERE index_key = ? AND version = ?"),
      addChange: prepare(
        "INSERT INTO changes (index_key, version, major, parent, records, body) VALUES (?, ?, ?, ?, ?, ?)",
      ),
    };
  }

  indexes(): string[] {
    return this.statements.indexes!.all().map((r) => r.index_key as string);
  }

  addIndex(key: string): void {
    this.statements.addIndex!.run(key);
  }

  removeIndex(key: string): void {
    this.transaction(() => {
      this.statements.removeIndexChanges!.run(key);
      this.statements.removeIndexMajors!.run(key);
      this.statements.removeIndex!.run(key);
    });
  }

  majors(key: string): MajorRow[] {
    return this.statements.majors!.all(key).map((r) => ({
      major: Number(r.major),
      parent: r.parent as string | null,
      records: Number(r.records),
      dir: r.dir as string,
    }));
  }

  addMajor(key: string, row: MajorRow): void {
    this.statements.addMajor!.run(key, row.major, row.parent, row.records, row.dir);
  }

  /** Removes a major and every change on top of it. */
  removeMajor(key: string, major: number): void {
    this.transaction(() => {
      this.statements.removeMajorChanges!.run(key, major);
      this.statements.removeMajor!.run(key, major);
    });
  }

  changes(key: string): ChangeRow[] {
    return this.statements.changes!.all(key).map((r) => ({
      version: r.version as string,
      parent: r.parent as string,
      records: Number(r.records),
      body: r.body as string,
    }));
  }

  /**
   * Commits record changes of one index; resolves with each row's outcome, in order. Synced each:
   * on the change log's thread, each row durable once fulfilled (a row that fails leaves the
   * others). Otherwise on this thread, all or none, into the open transaction (COMMIT_AFTER_MS),
   * committed into the write-ahead log within milliseconds, where kill -9 does not reach them;
   * they reach the disk at the next `sync()`, which fails if their commit did. Posting each batch
   * to the thread and back was the largest part of applying a write on a replicating node (D-292).
   */
  addChanges(key: string, rows: readonly { major: number; row: ChangeRow }[]): Promise<PromiseSettledResult<void>[]> {
    if (this.syncEachCommit)
      return Promise.allSettled(rows.map(({ major, row }) => this.changeLog.append(key, major, row)));
    const insert = ({ major, row }: { major: number; row: ChangeRow }) =>
      this.statements.addChange!.run(key, row.version, major, row.parent, row.records, row.body);
    try {
      this.openForChanges();
      // A statement is all or none by itself; several, within a savepoint.
      if (rows.length === 1) insert(rows[0]!);
      else {
        this.db.exec("SAVEPOINT batch");
        try {
          rows.forEach(insert);
          this.db.exec("RELEASE batch");
        } catch (error) {
          this.db.exec("ROLLBACK TO batch");
          this.db.exec("RELEASE batch");
          throw error;
        }
      }
    } catch (error) {
      return Promise.resolve(rows.map(() => ({ status: "rejected", reason: error }) as const));
    }
    this.syncTimer ??= setTimeout(() => {
      this.syncTimer = undefined;
      // biome-ignore lint/plugin: a background flush; the next sync() flushes again and reports its failure.
      this.sync().catch(() => {});
    }, SYNC_SOON_MS).unref();
    return Promise.resolve(rows.map(() => ({ status: "fulfilled", value: undefined }) as const));
  }

  /**
   * Resolves once every commit made before the call is on disk (immediately when each is synced);
   * rejects once change rows could not be committed (commitError).
   */
  sync(): Promise<void> {
    if (this.syncEachCommit) return Promise.resolve();
    this.commitChanges();
    return this.commitError ? Promise.reject(this.commitError) : this.changeLog.sync();
  }

  /** Opens the transaction change rows are added to, unless one is open. */
  private openForChanges(): void {
    if (this.commitTimer !== undefined) return;
    this.db.exec("BEGIN IMMEDIATE");
    this.commitTimer = setTimeout(() => this.commitChanges(), COMMIT_AFTER_MS);
  }

  /** Commits the change rows' open transaction, if one is open. */
  private commitChanges(): void {
    if (this.commitTimer === undefined) return;
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    try {
      this.db.exec("COMMIT");
    } catch (error) {
      this.commitError = error as Error;
      // biome-ignore lint/plugin: SQLite may have rolled the transaction back already; the error is kept for sync().
      try {
        this.db.exec("ROLLBACK");
      } catch {}
    }
  }

  removeChanges(key: string, versions: readonly string[]): void {
    this.transaction(() => {
      for (const v of versions) this.statements.removeChange!.run(key, v);
    });
  }

  /**
   * Commits a purge in one transaction: majors moved to segments rebuilt without the record,
   * changes rewritten without it, new counts. Then the log is checkpointed and truncated, so the
   * old row images leave the write-ahead log as well as the database file.
   */
  purge(key: string, majors: readonly MajorRow[], changes: readonly ChangeRow[]): void {
    this.transaction(() => {
      for (const m of majors) this.statements.setMajor!.run(m.dir, m.records, key, m.major);
      for (const c of changes) this.statements.setChange!.run(c.body, c.records, key, c.version);
    });
    this.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  async close(): Promise<void> {
    clearTimeout(this.syncTimer);
    this.commitChanges();
    // biome-ignore lint/plugin: closing anyway; what did not reach the disk is in the change log that rebuilds it.
    await this.sync().catch(() => {});
    await this.changeLog.close();
    this.db.close();
  }

  private transaction(body: () => void): void {
    this.commitChanges();
    this.db.exec("BEGIN IMMEDIATE");
    try {
      body();
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }
}
