// Writes to one index are serialised in process (docs/versions.md): each version id is drawn from
// the state the previous write left, so two writes must never interleave. With replication
// (docs/replication.md) another node may have written the index meanwhile: its append wins, this
// write's append is refused as stale, and the write runs again once this node has caught up.
import { UnavailableError } from "../../domain/errors.ts";
import { StaleAppendError } from "../../ports/change-log.ts";

/**
 * How a stale write waits for this node to apply what other nodes appended; `clientWaits`: for a
 * write a client is owed an answer to soon, a record write or an activation asked over HTTP (a 503
 * past a bound, D-318, D-320).
 */
export type CatchUp = (clientWaits: boolean) => Promise<void>;

/** A write still stale after this many tries is failing for another reason: say so. */
const MAX_STALE_RETRIES = 20;

/** Refuses a client's write that an earlier one kept from starting in time: nothing was written. */
function notStarted(): UnavailableError {
  return new UnavailableError(
    "an earlier change to the index is still being applied; this one was not written, try again",
    { retryAfterSeconds: 1 },
  );
}

export class IndexLocks {
  /** Per index, the tail of its chain of writes; removed once the chain is idle. */
  private readonly tails = new Map<string, Promise<unknown>>();
  private catchUp: CatchUp | undefined;
  /** How long a write a client waits for may wait for the lock (unbounded without replication). */
  private clientWaitMs = Number.POSITIVE_INFINITY;

  /**
   * Set when replication is on. An earlier write may then hold the lock while the node follows
   * the log (an automatic checkpoint's adoption or a retention's entry wait up to 120 s for it):
   * a client's write that has not started within `clientWaitMs` is refused and never runs (D-346).
   */
  setCatchUp(catchUp: CatchUp, options: { clientWaitMs: number }): void {
    this.catchUp = catchUp;
    this.clientWaitMs = options.clientWaitMs;
  }

  /**
   * Runs `fn` after every earlier write to the same index has finished, whether it failed or not.
   * `clientWaits`: its wait for the lock and its catch-up are bounded (see setCatchUp, CatchUp).
   */
  run<T>(indexId: string, fn: () => Promise<T>, options: { clientWaits?: boolean } = {}): Promise<T> {
    const startBy = options.clientWaits ? Date.now() + this.clientWaitMs : Number.POSITIVE_INFINITY;
    return this.runOnce(indexId, fn, startBy).catch(async (error: unknown) => {
      if (!(error instanceof StaleAppendError) || this.catchUp === undefined) throw error;
      for (let attempt = 1; ; attempt++) {
        // Outside the lock: the index's other writes need not wait while this one catches up.
        await this.catchUp(options.clientWaits ?? false);
        try {
          return await this.runOnce(indexId, fn, startBy);
        } catch (retryError) {
          if (!(retryError instanceof StaleAppendError)) throw retryError;
          if (attempt >= MAX_STALE_RETRIES) {
            throw new UnavailableError("the index is being written from other regions at this moment; try again", {
              retryAfterSeconds: 1,
            });
          }
        }
      }
    });
  }

  /** `fn` once the lock is free; not at all when that comes after `startBy` (a 503 then). */
  private runOnce<T>(indexId: string, fn: () => Promise<T>, startBy: number): Promise<T> {
    const held = this.tails.get(indexId);
    const previous = held ?? Promise.resolve();
    let state: "waiting" | "started" | "given up" = "waiting";
    const start = () => {
      if (state === "given up") return Promise.reject(notStarted());
      state = "started";
      return fn();
    };
    const run = previous.then(start, start);
    // biome-ignore lint/plugin: the tail only orders the next write; `run` hands the failure to this write's caller.
    const tail = run.catch(() => {});
    this.tails.set(indexId, tail);
    void tail.then(() => {
      if (this.tails.get(indexId) === tail) this.tails.delete(indexId);
    });
    // A free lock starts `fn` in a microtask: only a held one can make it give up.
    if (held === undefined || startBy === Number.POSITIVE_INFINITY) return run;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          if (state !== "waiting") return;
          state = "given up";
          reject(notStarted());
        },
        Math.max(0, startBy - Date.now()),
      );
      run.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  }
}
