// Builds a segment in a worker thread (build-worker.ts) and loads the result here. Records cross
// the thread boundary in batches. A few batches may be in flight, so that the caller parses the next
// records while the worker indexes the last ones (two cores working, not taking turns); beyond that
// the caller waits, so a fast producer cannot pile records up in memory.
import { Worker } from "node:worker_threads";
import type { SearchRecord } from "../../ports/engine.ts";
import type { BuildReply, BuildRequest } from "./build-worker.ts";
import { Segment } from "./segment.ts";

type Request = BuildRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;

const BATCH = 2_000;
const IN_FLIGHT = 4;

export class OffThreadBuilder {
  readonly dir: string;
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private nextId = 0;
  private batch: SearchRecord[] = [];
  /** Acknowledgements of the batches sent and not yet waited for, oldest first. */
  private readonly sent: Promise<void>[] = [];
  private failed: Error | undefined;

  private constructor(dir: string) {
    this.dir = dir;
    this.worker = new Worker(new URL("./build-worker.ts", import.meta.url));
    this.worker.on("message", (reply: BuildReply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) waiter?.resolve();
      else waiter?.reject(new Error(reply.message));
    });
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => this.fail(new Error(`the segment build thread exited (${code})`)));
  }

  static async create(dir: string, maxPrefix: number): Promise<OffThreadBuilder> {
    const builder = new OffThreadBuilder(dir);
    await builder.call({ type: "create", dir, maxPrefix });
    return builder;
  }

  /** Queues a record; it reaches the builder with its batch. */
  async add(record: SearchRecord): Promise<void> {
    this.batch.push(record);
    if (this.batch.length >= BATCH) await this.flush();
  }

  async addAll(records: SearchRecord[]): Promise<void> {
    for (const record of records) {
      this.batch.push(record);
      if (this.batch.length >= BATCH) await this.flush();
    }
  }

  /** Writes the segment (fsynced) and loads it on this thread. */
  async finish(): Promise<Segment> {
    try {
      await this.flush();
      while (this.sent.length) await this.sent.shift();
      await this.call({ type: "finish" });
    } finally {
      await this.stop();
    }
    return Segment.load(this.dir);
  }

  async abort(): Promise<void> {
    try {
      if (!this.failed) await this.call({ type: "abort" });
    } finally {
      await this.stop();
    }
  }

  private async flush(): Promise<void> {
    if (this.batch.length === 0) return;
    const records = this.batch;
    this.batch = [];
    const acknowledged = this.call({ type: "add", json: JSON.stringify(records) });
    // A failure surfaces when this batch is waited for (below or in finish), not as an unhandled rejection.
    acknowledged.catch(() => {});
    this.sent.push(acknowledged);
    while (this.sent.length >= IN_FLIGHT) await this.sent.shift();
  }

  private call(request: Request): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...request, id } as BuildRequest);
    });
  }

  private fail(error: Error): void {
    this.failed ??= error;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }

  private async stop(): Promise<void> {
    this.worker.removeAllListeners("exit");
    await this.worker.terminate();
  }
}
