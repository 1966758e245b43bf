// PGlite in a worker thread (pglite-worker.ts), seen from the main thread as the small part of
// PGlite's client that Drizzle's PGlite driver calls: query, exec, transaction and close.
// Queries and transactions keep PGlite's own order: its mutex runs in the worker, so a query
// outside a transaction waits for the open one exactly as it did on the main thread.
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import type { StoreErrorData, StoreReply, StoreRequest } from "./pglite-worker.ts";

/** PGlite's two WebAssembly programs, compiled once per process and given to every thread. */
export interface PgliteModules {
  pglite: WebAssembly.Module;
  initdb: WebAssembly.Module;
}

// Each thread compiling the programs itself made V8 compile and free their code once per open
// database; a process of the tests opens dozens, and that churn is what V8's fatal checks on
// code pages (a known V8 problem with PGlite in worker threads) were seen in (D-317). Compiled
// here and held for the process's life, the code is made once and never freed; an open also
// costs about a third less CPU.
let modules: Promise<PgliteModules> | undefined;

/** Where PGlite's package keeps `file` (its WebAssembly programs). */
const pgliteFile = (file: string) =>
  join(dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite")), file);

function compiledModules(): Promise<PgliteModules> {
  if (modules === undefined) {
    const compile = async (file: string) => WebAssembly.compile(await readFile(pgliteFile(file)));
    const compiling = Promise.all([compile("pglite.wasm"), compile("initdb.wasm")]).then(([pglite, initdb]) => ({
      pglite,
      initdb,
    }));
    modules = compiling;
    // A failed read or compile is not kept: the next open tries again (the caller sees the failure).
    compiling.catch(() => {
      if (modules === compiling) modules = undefined;
    });
  }
  return modules;
}

/**
 * Compiles the programs now, synchronously (about 0.1 s), for the start's early open
 * (early-pglite.ts): begun while the server's modules load, an async compile, and any await,
 * ended only once they had all loaded (about 0.6 s later), and the thread could start only then.
 */
export function compileModulesNow(): PgliteModules {
  const compile = (file: string) => new WebAssembly.Module(readFileSync(pgliteFile(file)));
  const compiled = { pglite: compile("pglite.wasm"), initdb: compile("initdb.wasm") };
  modules ??= Promise.resolve(compiled);
  return compiled;
}

type Request = StoreRequest extends infer R ? (R extends { id: number } ? Omit<R, "id"> : never) : never;

/** A database error from the worker, with PostgreSQL's fields (code, constraint, detail…) on it. */
export class PgliteThreadError extends Error {
  readonly code?: string;

  constructor(data: StoreErrorData) {
    super(data.message);
    this.name = data.name;
    Object.assign(this, data.fields);
  }
}

interface QueryOptions {
  rowMode?: "array" | "object";
}

/** The client a transaction callback receives. */
export interface ThreadQueries {
  query(sql: string, params?: unknown[], options?: QueryOptions): Promise<unknown>;
  exec(sql: string): Promise<unknown>;
}

export class PgliteThread implements ThreadQueries {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private next = 0;
  private failure: Error | undefined;
  private readonly ready: Promise<unknown>;

  private constructor(path: string, modules: PgliteModules) {
    this.worker = new Worker(new URL("./pglite-worker.ts", import.meta.url), { workerData: { path, modules } });
    this.ready = new Promise((resolve, reject) => this.waiting.set(0, { resolve, reject }));
    this.worker.on("message", (reply: StoreReply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.value);
      else waiter?.reject(new PgliteThreadError(reply.error));
    });
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => this.fail(new Error(`the embedded database thread exited (${code})`)));
  }

  /** Starts the thread and waits until PGlite has opened (or created) the database at `path`. */
  static async start(path: string): Promise<PgliteThread> {
    return PgliteThread.startWith(path, await compiledModules());
  }

  /** `start`, with the programs compiled already: the thread starts before this returns. */
  static async startWith(path: string, modules: PgliteModules): Promise<PgliteThread> {
    const thread = new PgliteThread(path, modules);
    try {
      await thread.ready;
    } catch (error) {
      await thread.worker.terminate();
      throw error;
    }
    return thread;
  }

  query(sql: string, params: unknown[] = [], options: QueryOptions = {}): Promise<unknown> {
    return this.call({ op: "query", sql, params, rowMode: options.rowMode ?? "object" });
  }

  exec(sql: string): Promise<unknown> {
    return this.call({ op: "exec", sql });
  }

  async transaction<T>(body: (tx: ThreadQueries) => Promise<T>): Promise<T> {
    const tx = (await this.call({ op: "begin" })) as number;
    const queries: ThreadQueries = {
      query: (sql, params = [], options = {}) =>
        this.call({ op: "query", tx, sql, params, rowMode: options.rowMode ?? "object" }),
      exec: (sql) => this.call({ op: "exec", tx, sql }),
    };
    let result: T;
    try {
      result = await body(queries);
    } catch (error) {
      await this.call({ op: "end", tx, commit: false });
      throw error;
    }
    await this.call({ op: "end", tx, commit: true });
    return result;
  }

  async close(): Promise<void> {
    if (this.failure) return;
    await this.call({ op: "close" });
    this.failure = new Error("the embedded database is closed");
    await this.worker.terminate();
  }

  private call(request: Request): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...request, id } as StoreRequest);
    });
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}
