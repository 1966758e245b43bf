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

export class IndexLocks {
  /** Per index, the tail of its chain of writes; removed once the chain is idle. */
  private readonly tails = new Map<string, Promise<unknown>>();
  private catchUp: CatchUp | undefined;

  /** Set when replication is on. */
  setCatchUp(catchUp: CatchUp): void {
    this.catchUp = catchUp;
  }

  /**
   * Runs `fn` after every earlier write to the same index has finished, whether it failed or not.
   * `clientWaits`: its catch-up is bounded (see CatchUp).
   */
  run<T>(indexId: string, fn: () => Promise<T>, options: { clientWaits?: boolean } = {}): Promise<T> {
    return this.runOnce(indexId, fn).catch(async (error: unknown) => {
      if (!(error instanceof StaleAppendError) || this.catchUp === undefined) throw error;
      for (let attempt = 1; ; attempt++) {
        // Outside the lock: the index's other writes need not wait while this one catches up.
        await this.catchUp(options.clientWaits ?? false);
        try {
          return await this.runOnce(indexId, fn);
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

  private runOnce<T>(indexId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(indexId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    // biome-ignore lint/plugin: the tail only orders the next write; `run` hands the failure to this write's caller.
    const tail = run.catch(() => {});
    this.tails.set(indexId, tail);
    void tail.then(() => {
      if (this.tails.get(indexId) === tail) this.tails.delete(indexId);
    });
    return run;
  }
}
