// The worker side of ChangeLogWriter: appends change rows to the catalog on its own connection,
// each in a transaction committed with a full fsync, and answers once it is durable. The fsync
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

parentPort!.on("message", (r: AppendRequest) => {
  try {
    insert.run(r.indexKey, r.version, r.major, r.parent, r.records, r.body);
    parentPort!.postMessage({ id: r.id, ok: true } satisfies AppendReply);
  } catch (error) {
    parentPort!.postMessage({ id: r.id, ok: false, message: (error as Error).message } satisfies AppendReply);
  }
});
