// The engine's durable bookkeeping in SQLite (node:sqlite, WAL, synchronous=FULL): which indexes
// and major segments exist, and the log of record changes (one row per minor version). A row
// committed here is the acknowledgement: it survives kill -9 and power loss, and a segment
// directory without a row is debris from an interrupted build.
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

export class Catalog {
  private readonly db: DatabaseSync;
  private readonly statements: Record<string, StatementSync>;
  /** Record changes are appended from a worker thread: their commit's fsync stays off the event loop. */
  private readonly changeLog: ChangeLogWriter;

  constructor(file: string) {
    this.db = new DatabaseSync(file);
    this.db.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = FULL;
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

  /** Resolves once the row is durable. */
  addChange(key: string, major: number, row: ChangeRow): Promise<void> {
    return this.changeLog.append(key, major, row);
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
    await this.changeLog.close();
    this.db.close();
  }

  private transaction(body: () => void): void {
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
