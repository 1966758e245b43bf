// Segment files move between disk and the object store on a thread of their own, with its own
// NATS connection. On the server's thread, the 1 MB buffers of a 1M-record major's transfer
// (about 465 MB of them on each node) started a full garbage collection of the server's 30 MB
// heap 20 to 35 times per transfer, a second of CPU per node on two cores that the transfer
// itself needed (D-288). The thread's heap is a few MB, so the same collections cost little, and
// the server's thread keeps answering meanwhile.
import { Worker } from "node:worker_threads";
import type { FetchPart, PutPart } from "./parts.ts";
import type { TransferData, TransferReply, TransferRequest } from "./transfer-worker.ts";

/** How long a closing thread has to exit by itself. */
const CLOSE_GRACE_MS = 5_000;

type Request =
  Exclude<TransferRequest, { op: "close" }> extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;

export class TransferThread {
  private worker: Worker | undefined;
  private readonly waiting = new Map<
    number,
    { resolve: (copyFailed?: string) => void; reject: (error: Error) => void }
  >();
  private next = 0;
  private closed = false;
  private readonly data: TransferData;
  private readonly onCopyFailed: (part: string, reason: string) => void;

  /** `onCopyFailed`: a part was fetched from the bucket because the region's copy failed (the thread has no logger). */
  constructor(data: TransferData, onCopyFailed: (part: string, reason: string) => void = () => {}) {
    this.data = data;
    this.onCopyFailed = onCopyFailed;
  }

  async put(part: PutPart): Promise<void> {
    await this.call({ op: "put", part });
  }

  async fetch(part: FetchPart): Promise<void> {
    const copyFailed = await this.call({ op: "fetch", part });
    if (copyFailed !== undefined) this.onCopyFailed(part.object, copyFailed);
  }

  /**
   * Asks the thread to end its transfers and connection and exit. Ending it from outside
   * (`terminate()`) can abort the whole process: Node checks that a zstd stream it tears down was
   * initialised, and a termination landing while the thread builds one fails that check (seen in
   * CI). A thread that has not exited after a few seconds is terminated all the same.
   */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.postMessage({ id: ++this.next, op: "close" } satisfies TransferRequest);
    const late = setTimeout(() => void worker.terminate(), CLOSE_GRACE_MS);
    await exited;
    clearTimeout(late);
  }

  /** Started on the first transfer (most nodes of most deployments rarely move files), and again after it died. */
  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(new URL("./transfer-worker.ts", import.meta.url), { workerData: this.data });
    worker.unref();
    worker.on("message", (reply: TransferReply) => {
      const waiter = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      if (reply.ok) waiter?.resolve(reply.copyFailed);
      else waiter?.reject(Object.assign(new Error(reply.message), reply.code ? { code: reply.code } : {}));
    });
    const gone = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const waiter of this.waiting.values()) waiter.reject(error);
      this.waiting.clear();
    };
    worker.on("error", gone);
    worker.on("exit", (code) => gone(new Error(`the transfer thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Resolves with the reply's `copyFailed`, if any. */
  private call(request: Request): Promise<string | undefined> {
    if (this.closed) return Promise.reject(new Error("the change log is closed"));
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.thread().postMessage({ ...request, id } as TransferRequest);
    });
  }
}
