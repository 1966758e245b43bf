// Long builds (bulk ingest, checkpoint) run on the event loop that also serves searches: they give
// it back about every PAUSE_EVERY_MS, so a search waits milliseconds, not the whole build.

const PAUSE_EVERY_MS = 10;

export class Pacer {
  private last = performance.now();

  /** Cheap enough to ask often; callers still ask only every few thousand iterations. */
  due(): boolean {
    return performance.now() - this.last >= PAUSE_EVERY_MS;
  }

  async pause(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }
}
