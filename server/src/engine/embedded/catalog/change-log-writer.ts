// Appends record changes to the catalog from a worker thread (change-log-worker.ts), so the
// commit's fsync never holds the event loop. A change is acknowledged only once its row is
// durable, exactly as before; only the waiting moved off the server's thread. Where the catalog's
// commits are not synced each (Catalog, `syncEachCommit`), the same thread flushes them on demand.
import { Worker } from "node:worker_threads";
import type { ChangeRow } from "./catalog.ts";
import type { AppendReply, AppendRequest, SyncRequest } from "./change-log-worker.ts";

export class ChangeLogWriter {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private next = 0;
  private failure: Error | undefined;
  private readonly pending = new Set<Promise<void>>();
  private batch: AppendRequest[] = [];
  private syncing: Promise<void> | undefined;
  private syncingNext: Promise<void> | undefined;

  constructor(file: string) {
    this.worker = new Worker(new URL("./change-log-worker.ts", import.meta.url), { workerData: { file } });
    this.worker.on("message", (replies: AppendReply[]) => {
      for (const reply of replies) {
        const waiter = this.waiting.get(reply.id);
        this.waiting.delete(reply.id);
        if (reply.ok) waiter?.resolve();
        else waiter?.reject(new Error(reply.message));
      }
    });
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => this.fail(new Error(`the change log thread exited (${code})`)));
  }

  /** Resolves once the row is committed to disk. */
  append(indexKey: string, major: number, row: ChangeRow): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.next;
    const appended = new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // Rows asked for in the same turn go over together, and are committed with one fsync.
      if (this.batch.length === 0) setImmediate(() => this.flush());
      this.batch.push({ id, indexKey, major, ...row });
    });
    this.pending.add(appended);
    const forget = () => this.pending.delete(appended);
    appended.then(forget, forget);
    return appended;
  }

  /** Resolves once every commit to the catalog made before the call is on disk. */
  sync(): Promise<void> {
    if (this.syncing === undefined) {
      const syncing = this.syncOnce().finally(() => {
        if (this.syncing === syncing) this.syncing = undefined;
      });
      this.syncing = syncing;
      return syncing;
    }
    // The flush under way may have begun before this caller's commits: one more follows it, for
    // every caller that arrives meanwhile.
    // Whether the one under way succeeds or fails (its own callers hear of that), this one flushes.
    const next = () => {
      this.syncingNext = undefined;
      return this.sync();
    };
    this.syncingNext ??= this.syncing.then(next, next);
    return this.syncingNext;
  }

  private syncOnce(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const id = ++this.next;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ sync: id } satisfies SyncRequest);
    });
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    if (batch.length) this.worker.postMessage(batch);
  }

  /** Waits for the appends already asked for, then stops the thread. */
  async close(): Promise<void> {
    const pending = [...this.pending, this.syncing, this.syncingNext].filter((p) => p !== undefined);
    this.failure ??= new Error("the change log is closed");
    await Promise.allSettled(pending);
    await this.worker.terminate();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}
