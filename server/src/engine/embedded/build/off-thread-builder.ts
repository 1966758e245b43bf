// Builds a segment in a worker thread (build-worker.ts) and opens the files it wrote here. Records cross
// the thread boundary in batches. A few batches may be in flight, so that the caller parses the next
// records while the worker indexes the last ones (two cores working, not taking turns); beyond that
// the caller waits, so a fast producer cannot pile records up in memory.
import fs from "node:fs";
import { Worker } from "node:worker_threads";
import type { SearchRecord } from "../../../ports/engine.ts";
import type { BuildReply, BuildRequest } from "./build-worker.ts";
import { Segment } from "../segment/segment.ts";

type Built = Extract<BuildReply, { ok: true }>["built"];
type Request = BuildRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;

const BATCH = 2_000;
const IN_FLIGHT = 4;

/**
 * Threads kept after a build for the next one: starting one loads the builder's modules, 130 to
 * 180 ms of CPU, which was most of the cost of an automatic checkpoint of a small index (one every
 * SIFT_COALESCE_AFTER writes on every node). Only a thread that built a small segment is kept: one
 * that built millions of records keeps a heap to match, which goes with the thread.
 */
const IDLE_THREADS = 2;
const KEEP_AFTER_AT_MOST = 100_000;
const idle: Worker[] = [];

/** Only the events this file listens to: Worker keeps its own listeners (its port's ref count). */
function forgetListeners(worker: Worker): void {
  for (const event of ["message", "error", "exit"]) worker.removeAllListeners(event);
}

function takeThread(): Worker {
  const kept = idle.pop();
  if (kept !== undefined) {
    forgetListeners(kept);
    kept.ref();
    return kept;
  }
  return new Worker(new URL("./build-worker.ts", import.meta.url));
}

function keepThread(worker: Worker): void {
  forgetListeners(worker);
  // An idle thread neither keeps the process alive nor stays in the list once gone.
  worker.unref();
  const forget = () => {
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
  };
  // An idle thread that fails is not used again (the next build starts a new one).
  worker.once("error", forget);
  worker.once("exit", forget);
  idle.push(worker);
}

export class OffThreadBuilder {
  readonly dir: string;
  private readonly map: boolean;
  private readonly worker: Worker;
  private readonly waiting = new Map<
    number,
    { resolve: (reply: Built | undefined) => void; reject: (error: Error) => void }
  >();
  private nextId = 0;
  private batch: SearchRecord[] = [];
  /** Acknowledgements of the batches sent and not yet waited for, oldest first. */
  private readonly sent: Promise<unknown>[] = [];
  private failed: Error | undefined;
  private stopped = false;
  /** Records sent to the thread, which decide whether it is kept afterwards. */
  private added = 0;
  /** The thread finished or abandoned its build cleanly and may build again. */
  private reusable = false;

  private constructor(dir: string, map: boolean) {
    this.dir = dir;
    this.map = map;
    this.worker = takeThread();
    this.worker.on("message", (reply: BuildReply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.built);
      else waiter?.reject(new Error(reply.message));
    });
    this.worker.on("error", (error) => this.fail(error));
    this.worker.on("exit", (code) => this.fail(new Error(`the segment build thread exited (${code})`)));
  }

  /** `map`: open the finished segment as a map of its file (see Segment.load). */
  static async create(dir: string, maxPrefix: number, map = true): Promise<OffThreadBuilder> {
    const builder = new OffThreadBuilder(dir, map);
    await builder.call({ type: "create", dir, maxPrefix });
    return builder;
  }

  /** Queues a record; it reaches the builder with its batch. */
  async add(record: SearchRecord): Promise<void> {
    this.batch.push(record);
    if (this.batch.length >= BATCH) await this.flush();
  }

  /**
   * Every record of the segment in `dir` but the documents in `skip`, read by the build thread;
   * `docCount` is the segment's.
   */
  async copyFrom(dir: string, docCount: number, skip: Iterable<number>, prefix = ""): Promise<void> {
    await this.flush();
    const docs = Uint32Array.from(skip);
    await this.call({ type: "copy", dir, prefix, skip: docs });
    this.added += docCount - docs.length;
  }

  async addAll(records: SearchRecord[]): Promise<void> {
    for (const record of records) {
      this.batch.push(record);
      if (this.batch.length >= BATCH) await this.flush();
    }
  }

  /** Writes the segment (fsynced) and opens it. */
  async finish(): Promise<Segment> {
    let built: Built;
    try {
      await this.flush();
      while (this.sent.length) await this.sent.shift();
      built = await this.call({ type: "finish" });
      this.reusable = true;
    } finally {
      await this.stop();
    }
    if (!built) throw new Error("the segment build thread finished without a segment");
    return Segment.load(this.dir, this.map);
  }

  /** Removes everything written. Safe after a failed finish, when the thread is already gone. */
  async abort(): Promise<void> {
    try {
      // The thread closes the file it writes; a thread that is gone has nothing left to close.
      if (!this.stopped && !this.failed) {
        await this.call({ type: "abort" });
        this.reusable = true;
      }
    } catch {
      // the directory is removed below all the same
    } finally {
      await this.stop();
      await fs.promises.rm(this.dir, { recursive: true, force: true });
    }
  }

  private async flush(): Promise<void> {
    if (this.batch.length === 0) return;
    const records = this.batch;
    this.batch = [];
    this.added += records.length;
    const acknowledged = this.call({ type: "add", json: JSON.stringify(records) });
    // Not dropped: this same promise is awaited below or in finish(), which rethrows its failure;
    // the empty handler only keeps it from counting as an unhandled rejection meanwhile.
    // biome-ignore lint/plugin: awaited later (see above), so the failure is not lost.
    acknowledged.catch(() => {});
    this.sent.push(acknowledged);
    while (this.sent.length >= IN_FLIGHT) await this.sent.shift();
  }

  private call(request: Request): Promise<Built | undefined> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.stopped) return Promise.reject(new Error("the segment build thread has already stopped"));
    const id = this.nextId++;
    return new Promise<Built | undefined>((resolve, reject) => {
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
    if (this.stopped) return;
    this.stopped = true;
    if (this.reusable && !this.failed && this.added <= KEEP_AFTER_AT_MOST && idle.length < IDLE_THREADS) {
      keepThread(this.worker);
      return;
    }
    this.worker.removeAllListeners("exit");
    await this.worker.terminate();
  }
}
