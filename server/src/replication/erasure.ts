// A purged record's copies in the log and the object store (D-277, D-298): removed behind a new
// snapshot once every live node has applied the purge, by the node that wrote the purge, or by
// another node when that one is gone for good.
import type { ReplicaHost } from "./replica-host.ts";
import type { SnapshotManifest } from "./snapshots.ts";

/** What the erasure uses of its node's replica. */
export interface ErasureHost extends ReplicaHost {
  snapshotNow(index: string): Promise<SnapshotManifest | undefined>;
  /** Saves the replica's state a moment later. */
  saveSoon(): void;
}

export class PurgeErasure {
  private readonly host: ErasureHost;
  /** Erasures after purges under way here, per index (see erase). */
  private readonly erasing = new Map<string, number>();
  /** The next look at another node's purge clean-up, per index (see watch). */
  private readonly watches = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(host: ErasureHost) {
    this.host = host;
  }

  /** At start: the purges whose copies this node had not removed, or was watching, when it stopped. */
  resume(): void {
    for (const index of this.host.state.erasing) this.erase(index);
    for (const index of this.host.state.watching.keys()) this.watch(index);
  }

  stop(): void {
    for (const watch of this.watches.values()) clearTimeout(watch);
  }

  /**
   * After this node's purge (or one whose writer is gone, D-298), the record's copies in the log
   * and the object store go (D-277): a snapshot of the index without it, as the periodic one is
   * taken, then the removal once every live node has applied the purge. Otherwise they stayed
   * until two snapshots later, which a quiet index may never reach.
   */
  erase(index: string): void {
    // Kept in the state until done, so that a restart carries on.
    this.host.state.erasing.add(index);
    this.erasing.set(index, (this.erasing.get(index) ?? 0) + 1);
    // Done (or given up, with a warning: the periodic snapshots take over): a restart need not
    // carry on, unless another purge of the index is still being erased.
    const settle = () => {
      const left = (this.erasing.get(index) ?? 1) - 1;
      if (left > 0) return void this.erasing.set(index, left);
      this.erasing.delete(index);
      this.host.state.erasing.delete(index);
      this.host.saveSoon();
    };
    void this.host
      .snapshotNow(index)
      .then(async (snapshot) => {
        if (this.host.stopping()) return;
        if (snapshot === undefined) return settle(); // the index was dropped: nothing of it is left
        const erased = await this.host.snapshots.erase(index, snapshot, () => this.host.stopping());
        if (this.host.stopping()) return;
        if (erased === undefined) {
          this.host.logger.warn("a purged record's copies stay in the log until the index's next snapshots", { index });
        }
        settle();
      })
      .catch((error: Error) =>
        // Left in `erasing`: the next start tries again.
        this.host.logger.warn("could not remove a purged record's copies from the log and object store", {
          index,
          error: error.message,
        }),
      );
  }

  /**
   * Another node's purge: that node removes the record's copies (erase), a restart of it
   * included, and says how far it got (Snapshots.erasedThrough). Should it be gone for good
   * before it did (no report for SIFT_REPLICATION_NODE_GONE_MS), the live node with the lowest id
   * does the removal instead (D-298). Looked at once the writer could count as gone, then every
   * third of that time, until the copies are gone.
   */
  watch(index: string, after = this.host.snapshots.goneAfterMs): void {
    if (this.watches.has(index) || this.host.stopping()) return;
    const again = () => this.watch(index, Math.ceil(this.host.snapshots.goneAfterMs / 3));
    const watch = setTimeout(() => {
      this.watches.delete(index);
      this.look(index).then(
        (pending) => pending && again(),
        (error: Error) => {
          this.host.logger.warn("could not look at another node's purge clean-up; trying again", {
            index,
            error: error.message,
          });
          again();
        },
      );
    }, after);
    watch.unref();
    this.watches.set(index, watch);
  }

  /** One look at a watched purge (see watch); true while it is still to be removed. */
  private async look(index: string): Promise<boolean> {
    const watched = this.host.state.watching.get(index);
    if (watched === undefined || this.host.stopping()) return false;
    const settled = () => {
      // A newer purge of the index watched meanwhile is looked at on its own.
      if (this.host.state.watching.get(index) !== watched) return true;
      this.host.state.watching.delete(index);
      this.host.saveSoon();
      return false;
    };
    if (this.host.state.dropped.has(index) || (await this.host.snapshots.erasedThrough(index)) >= watched.seq)
      return settled();
    // Two snapshots after the purge, the periodic clean-up has removed the copies too (D-221):
    // the case of a writer that gave up on a node that lagged.
    const pointer = await this.host.snapshots.pointer(index);
    if (pointer?.previous !== undefined && pointer.previous.seq > watched.seq) return settled();
    const live = await this.host.snapshots.liveNodes();
    if (live.includes(watched.writer)) return true;
    const successor = live.filter((node) => node !== watched.writer).sort()[0];
    if (successor !== this.host.node) return true;
    this.host.logger.warn("removing the copies of a purged record for its writer, which is gone", {
      index,
      writer: watched.writer,
      purge: watched.seq,
    });
    this.erase(index);
    return settled();
  }
}
