// Appends record changes to the catalog from a worker thread (change-log-worker.ts), so the
// commit's fsync never holds the event loop. A change is acknowledged only once its row is
// durable, exactly as before; only the waiting moved off the server's thread.
import { Worker } from "node:worker_threads";
import type { ChangeRow } from "./catalog.ts";
import type { AppendReply, AppendRequest } from "./change-log-worker.ts";

export class ChangeLogWriter {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private next = 0;
  private failure: Error | undefined;
  private readonly pending = new Set<Promise<void>>();
  private batch: AppendRequest[] = [];

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

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    if (batch.length) this.worker.postMessage(batch);
  }

  /** Waits for the appends already asked for, then stops the thread. */
  async close(): Promise<void> {
    const pending = [...this.pending];
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
