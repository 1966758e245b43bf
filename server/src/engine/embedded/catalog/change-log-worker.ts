// The worker side of ChangeLogWriter: appends change rows to the catalog on its own connection,
// a batch (the rows asked for in one turn of the server's event loop) in a transaction committed
// with a full fsync, and answers once it is durable. The fsync
// took over 200 ms while an ingest wrote its segment; on the server's thread that was 200 ms
// in which no request was answered.
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

export type AppendReply = { id: number; ok: true } | { id: number; ok: false; message: string };

const db = new DatabaseSync((workerData as { file: string }).file);
db.exec(`
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
  PRAGMA secure_delete = ON;
  PRAGMA busy_timeout = 10000;
`);
const insert = db.prepare(
  "INSERT INTO changes (index_key, version, major, parent, records, body) VALUES (?, ?, ?, ?, ?, ?)",
);

const run = (r: AppendRequest) => insert.run(r.indexKey, r.version, r.major, r.parent, r.records, r.body);

parentPort!.on("message", (batch: AppendRequest[]) => {
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
