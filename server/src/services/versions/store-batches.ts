// With replication, the rows a writer records in the store after its changes are in the log and
// applied (docs/replication.md): one statement per index at a time, in version order, and what
// queues while one runs goes into the next one together (D-284). One statement per log entry
// before: at 500 writes/s an index's statements queued behind each other, and a write's
// acknowledgement waited for every statement ahead of its own. Since D-295 the acknowledgement
// does not wait for them at all; readers of the rows wait for what was given (settled).
import type { Db } from "../../store/open.ts";
import { type ChangeRow, recordChanges } from "./change-rows.ts";
import type { LiveAt } from "./context.ts";

/** Entries one statement takes at most (each up to group commit's 64 writes). */
const MAX_ENTRIES = 8;

interface Entry {
  /** Computed when its statement is made: the record counts are read from the engine then. */
  rows: () => Promise<ChangeRow[]>;
  liveAt: LiveAt | undefined;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class StoreBatches {
  /** Per index, the entries waiting for the statement in flight; absent when none is. */
  private readonly queues = new Map<string, Entry[]>();
  /** Per index, the newest entry given, while its queue drains (entries end in order). */
  private readonly newest = new Map<string, Promise<void>>();

  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /**
   * Records the rows of changes made after every earlier one given for the index; resolves once
   * the store has them. `liveAt` is this node's active version as of the changes (the newest of a
   * statement's entries is recorded).
   */
  record(indexId: string, rows: Entry["rows"], liveAt: LiveAt | undefined): Promise<void> {
    const recorded = new Promise<void>((resolve, reject) => {
      const entry = { rows, liveAt, resolve, reject };
      const queue = this.queues.get(indexId);
      if (queue) return void queue.push(entry);
      this.queues.set(indexId, []);
      void this.drain(indexId, [entry]);
    });
    this.newest.set(indexId, recorded);
    return recorded;
  }

  /**
   * Resolves once the statements of every entry given for the index so far have ended (written
   * or failed), not waiting for entries given later.
   */
  async settled(indexId: string): Promise<void> {
    // Its failure is its writer's to hear of (and every node records the rows again).
    await this.newest.get(indexId)?.then(
      () => undefined,
      () => undefined,
    );
  }

  private async drain(indexId: string, first: Entry[]): Promise<void> {
    for (let taken = first; taken.length > 0; taken = this.queues.get(indexId)!.splice(0, MAX_ENTRIES)) {
      try {
        const rows = (await Promise.all(taken.map((e) => e.rows()))).flat();
        const liveAt = taken.findLast((e) => e.liveAt !== undefined)?.liveAt;
        // A replica may have recorded the rows already; the active version is recorded as of a
        // log position, never set back (recordChanges).
        await recordChanges(this.db, rows, { activate: false, ifAbsent: true, liveAt });
        for (const e of taken) e.resolve();
      } catch (error) {
        for (const e of taken) e.reject(error);
      }
    }
    // Every entry given has ended: nothing is left to settle until the next one.
    this.queues.delete(indexId);
    this.newest.delete(indexId);
  }
}
