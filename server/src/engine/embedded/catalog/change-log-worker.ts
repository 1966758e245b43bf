// The worker side of ChangeLogWriter, on its own connection to the catalog. With a commit synced
// each time, it appends change rows, a batch (the rows asked for in one turn of the server's
// event loop) in a transaction committed with a full fsync, and answers once it is durable: the
// fsync took over 200 ms while an ingest wrote its segment, and on the server's thread that was
// 200 ms in which no request was answered. Where commits are not synced each (replication), it
// flushes the catalog to disk when asked, the same way off the server's thread.
import { closeSync, fstatSync, fsyncSync, openSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { parentPort, workerData } from "node:worker_threads";

export interface AppendRequest {
  id: number;
  indexKey: string;
  version: string;
  major: number;
  parent: string;
  records: number;
  body: string;
}

/** Asks for every commit made so far to be on disk. */
export interface SyncRequest {
  sync: number;
}

export type AppendReply = { id: number; ok: true } | { id: number; ok: false; message: string };

const file = (workerData as { file: string }).file;
const db = new DatabaseSync(file);
db.exec(`
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
  PRAGMA secure_delete = ON;
  PRAGMA busy_timeout = 10000;
`);
const insert = db.prepare(
  "INSERT INTO changes (index_key, version, major, parent, records, body) VALUES (?, ?, ?, ?, ?, ?)",
);

/** The write-ahead log is copied into the database at a sync once it is this large (SQLite's default: 1,000 pages). */
const CHECKPOINT_BYTES = 4 << 20;

const run = (r: AppendRequest) => insert.run(r.indexKey, r.version, r.major, r.parent, r.records, r.body);

/**
 * Commits not synced each live in the write-ahead log until a checkpoint copies them into the
 * database file. The log file's own flush makes every commit so far durable, whatever a
 * checkpoint could copy (a reader's snapshot holds it back). The checkpoint, past CHECKPOINT_BYTES,
 * keeps the log from growing: the server's connection never checkpoints, since on its thread the
 * flushes would hold every request.
 */
function syncCatalog(): void {
  let fd: number | undefined;
  try {
    fd = openSync(`${file}-wal`, "r");
  } catch (error) {
    // No log file: nothing was committed through it since the last checkpoint removed it.
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  let size = 0;
  if (fd !== undefined) {
    try {
      size = fstatSync(fd).size;
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  // Only past a size, as SQLite's own automatic checkpoint would: copying into the database file
  // and flushing it twice a second on every node made the disk slower for everyone else.
  if (size >= CHECKPOINT_BYTES) db.exec("PRAGMA wal_checkpoint(PASSIVE)");
}

parentPort!.on("message", (message: AppendRequest[] | SyncRequest) => {
  if (!Array.isArray(message)) {
    try {
      syncCatalog();
      parentPort!.postMessage([{ id: message.sync, ok: true }] satisfies AppendReply[]);
    } catch (error) {
      parentPort!.postMessage([{ id: message.sync, ok: false, message: (error as Error).message }]);
    }
    return;
  }
  const batch = message;
  try {
    db.exec("BEGIN");
    for (const r of batch) run(r);
    db.exec("COMMIT");
    parentPort!.postMessage(batch.map((r) => ({ id: r.id, ok: true }) satisfies AppendReply));
  } catch {
    // One row failed (a duplicate version, say): the others must not fail with it. Each is
    // tried on its own, as before batches.
    if (db.isTransaction) db.exec("ROLLBACK");
    const replies = batch.map((r): AppendReply => {
      try {
        run(r);
        return { id: r.id, ok: true };
      } catch (error) {
        return { id: r.id, ok: false, message: (error as Error).message };
      }
    });
    parentPort!.postMessage(replies);
  }
});
