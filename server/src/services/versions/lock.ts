// Writes to one index are serialised in process (docs/versions.md): each version id is drawn from
// the state the previous write left, so two writes must never interleave.

export class IndexLocks {
  /** Per index, the tail of its chain of writes; removed once the chain is idle. */
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after every earlier write to the same index has finished, whether it failed or not. */
  run<T>(indexId: string, fn: () => Promise<T>): Promise<T> {
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
