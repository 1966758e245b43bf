// The worker side of PgliteThread (pglite-thread.ts): the embedded PostgreSQL runs here, so its
// query execution (WebAssembly, synchronous while it runs) never holds the server's event loop.
// With it on the main thread, 32 writers of one tenant took another tenant's search p99 from
// 7 ms to 371 ms and /healthz to 1.7 s (docs/DECISIONS.md D-190).
import { PGlite, type Results, type Transaction, types } from "@electric-sql/pglite";
import { parentPort, workerData } from "node:worker_threads";
import type { PgliteModules } from "./pglite-thread.ts";

export type StoreRequest =
  | { id: number; op: "query"; tx?: number; sql: string; params: unknown[]; rowMode: "array" | "object" }
  | { id: number; op: "exec"; tx?: number; sql: string }
  | { id: number; op: "begin" }
  | { id: number; op: "end"; tx: number; commit: boolean }
  | { id: number; op: "close" };

/** A database error as plain data: its message and the PostgreSQL fields callers test (code, constraint…). */
export interface StoreErrorData {
  message: string;
  name: string;
  fields: Record<string, string | number | boolean>;
}

export type StoreReply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: StoreErrorData };

// Drizzle's PGlite session reads these types as the text PostgreSQL sends (its own parser table
// is made of functions, which cannot cross threads, so the same table is kept here).
const AS_TEXT = (value: string) => value;
const PARSERS = Object.fromEntries(
  [types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, 1231, 1115, 1185, 1187, 1182].map((oid) => [
    oid,
    AS_TEXT,
  ]),
);

interface OpenTransaction {
  handle: Transaction;
  finish(commit: boolean): void;
  /** Settles when PGlite has committed or rolled back. */
  done: Promise<void>;
}

const { path, modules } = workerData as { path: string; modules: PgliteModules };
const db = await PGlite.create(path, { pgliteWasmModule: modules.pglite, initdbWasmModule: modules.initdb });
const transactions = new Map<number, OpenTransaction>();
let nextTransaction = 0;

function errorData(error: unknown): StoreErrorData {
  const e = error as Error & Record<string, unknown>;
  const fields: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(e ?? {})) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") fields[key] = value;
  }
  return { message: e?.message ?? String(error), name: e?.name ?? "Error", fields };
}

/** Opens a transaction and keeps it open until the main thread says how it ends. */
function begin(): Promise<number> {
  const id = ++nextTransaction;
  return new Promise((opened, failed) => {
    let finish!: (commit: boolean) => void;
    const decided = new Promise<boolean>((resolve) => {
      finish = resolve;
    });
    const done = db
      .transaction(async (handle) => {
        transactions.set(id, { handle, finish, done });
        opened(id);
        if (!(await decided)) await handle.rollback();
      })
      .then(
        () => undefined,
        (error: unknown) => {
          failed(error);
          throw error;
        },
      );
    // biome-ignore lint/plugin: the failure reaches the caller through `failed` (opening) or through "end", which awaits `done`.
    done.catch(() => undefined);
  });
}

async function handle(request: StoreRequest): Promise<unknown> {
  switch (request.op) {
    case "query": {
      const target = request.tx === undefined ? db : transactionOf(request.tx).handle;
      const result: Results = await target.query(request.sql, request.params, {
        rowMode: request.rowMode,
        parsers: PARSERS,
      });
      return { rows: result.rows, fields: result.fields, affectedRows: result.affectedRows };
    }
    case "exec": {
      const target = request.tx === undefined ? db : transactionOf(request.tx).handle;
      return (await target.exec(request.sql)).map((r) => ({
        rows: r.rows,
        fields: r.fields,
        affectedRows: r.affectedRows,
      }));
    }
    case "begin":
      return begin();
    case "end": {
      const open = transactionOf(request.tx);
      transactions.delete(request.tx);
      open.finish(request.commit);
      await open.done;
      return null;
    }
    case "close":
      await db.close();
      return null;
  }
}

function transactionOf(id: number): OpenTransaction {
  const open = transactions.get(id);
  if (open === undefined) throw new Error(`transaction ${id} is not open`);
  return open;
}

parentPort!.on("message", (request: StoreRequest) => {
  handle(request).then(
    (value) => parentPort!.postMessage({ id: request.id, ok: true, value } satisfies StoreReply),
    (error: unknown) =>
      parentPort!.postMessage({ id: request.id, ok: false, error: errorData(error) } satisfies StoreReply),
  );
});
parentPort!.postMessage({ id: 0, ok: true, value: "ready" } satisfies StoreReply);
