// Keeping each index's history in the log rebuildable (docs/replication.md, "A log that lost
// entries"): Sift removes an index's entries only behind a snapshot that holds them, so a log that
// lost some another way is found by the nodes that hold the index, and repaired from their copy
// (D-369, D-374); an index whose entries no snapshot has held for a while gets one (D-375); a node
// that lacks an index, or entries of it, tells the others, which look at once (D-369, D-376).
import { UnavailableError } from "../domain/errors.ts";
import { type AppliedEntry, type ChangeLog, type LogEntry, StaleAppendError } from "../ports/change-log.ts";
import type { IndexLocks } from "../services/versions/lock.ts";
import type { ReplicaHost } from "./replica-host.ts";
import type { SnapshotManifest, SnapshotPointer } from "./snapshots.ts";

/**
 * How often a node looks at whether the log still holds what a node needs to rebuild each index
 * it holds (D-369); the first look is made this long after it follows the log, give or take half.
 */
const HISTORY_CHECK_MS = 10 * 60_000;

/**
 * An entry of an index no snapshot holds after this long gets one (D-375), as a fallback for an
 * index that may be lost from the log with no node left holding it.
 */
const SNAPSHOT_AFTER_MS = 60 * 60_000;

/** A node tells the others it lacks an index at most this often, and they look at most this often (D-369). */
const LACKING_EVERY_MS = 10_000;

/** Where a node's copy of an index stops short of an entry it reached (an index-lacking notice's). */
export type Gap = { applied: number; needs: number };

/** What a look at an index's history in the log found (LogHistory.lostHistory). */
interface HistoryLook {
  /** What the log lost of it, in words; absent when nothing is. */
  lost?: string;
  /** Where its newest snapshot was taken (0: none), when the look read that far. */
  covered?: number;
  /** Its first entry after that snapshot, when the look read it. */
  first?: AppliedEntry | null;
}

/** What the history's keeper uses of its node's replica. */
export interface HistoryHost extends ReplicaHost {
  log: ChangeLog;
  /** The replica's lock per index: a restore runs under it. */
  chains: IndexLocks;
  /** Whether the node follows the log (not while it restores at its start, or the log is out of reach). */
  following(): boolean;
  /** Whether the node has applied what the log held when it started. */
  startedUp(): boolean;
  isAside(index: string): boolean;
  snapshotNow(index: string): Promise<SnapshotManifest | undefined>;
  restoreIndex(index: string, pointer: SnapshotPointer): Promise<SnapshotManifest>;
}

export class LogHistory {
  private readonly host: HistoryHost;
  /** How often the histories are looked at (HISTORY_CHECK_MS). */
  private readonly checkEveryMs: number;
  /** An index's oldest entry that no snapshot holds gets one when it is this old (SNAPSHOT_AFTER_MS). */
  private readonly snapshotAfterMs: number;
  private historyTimer: ReturnType<typeof setTimeout> | undefined;
  /** Repairs of an index's history under way here (repairHistory), by index. */
  private readonly repairing = new Map<string, Promise<void>>();
  /** When this node last told the others it lacks an index, and last looked at one another lacks. */
  private readonly lackingSaid = new Map<string, number>();
  private readonly lackingLooked = new Map<string, number>();

  constructor(host: HistoryHost, options: { checkEveryMs?: number | undefined; snapshotAfterMs?: number | undefined }) {
    this.host = host;
    this.checkEveryMs = options.checkEveryMs ?? HISTORY_CHECK_MS;
    this.snapshotAfterMs = options.snapshotAfterMs ?? SNAPSHOT_AFTER_MS;
  }

  /** The first look at the histories, `checkEveryMs` from now give or take half, then the next ones. */
  start(): void {
    this.schedule(this.checkEveryMs * (0.5 + Math.random()));
  }

  stop(): void {
    clearTimeout(this.historyTimer);
  }

  /** The next look at the indexes' histories in `delayMs`, then about every `checkEveryMs`. */
  private schedule(delayMs: number): void {
    if (this.host.stopping()) return;
    this.historyTimer = setTimeout(() => {
      void this.checkHistories().finally(() => this.schedule(this.checkEveryMs * (0.75 + Math.random() / 2)));
    }, delayMs);
    this.historyTimer.unref?.();
  }

  /**
   * Sift removes an index's entries from the log only behind a snapshot that holds them. A log
   * that lost some in another way (a second NATS server started on a live one's store directory,
   * D-367) leaves a node that starts later without the index, and refuses for ever a write whose
   * compare-and-set names a lost entry. Each index held here whose history a new node could not
   * rebuild from its snapshot and the log is repaired from this node's copy (repairHistory).
   */
  private async checkHistories(): Promise<void> {
    let failed: { index: string; error: string; count: number } | undefined;
    let inARow = 0;
    for (const index of [...this.host.state.indexes.keys()]) {
      if (this.host.stopping()) return;
      if (this.host.state.dropped.has(index) || this.repairing.has(index) || this.host.isAside(index)) continue;
      try {
        const look = await this.lostHistory(index);
        if (look.lost !== undefined) await this.repairHistory(index, look.lost);
        else await this.snapshotIfOld(index, look);
        inARow = 0;
      } catch (error) {
        failed ??= { index, error: (error as Error).message, count: 0 };
        failed.count++;
        // Each question to a log out of reach waits for its timeout: not once per index.
        if (++inARow >= 3) break;
      }
    }
    // Once per look, not once per index.
    if (failed) {
      this.host.logger.warn("could not check whether the change log holds each index's history; looking again later", {
        ...failed,
      });
    }
  }

  /**
   * What the log lost of the index's entries that this node has applied, in words (`lost`; none
   * when a node that lacks the index could rebuild it from its snapshot and the log), with what the
   * look read on its way, for snapshotIfOld and snapshotFor to decide without asking again. Looks at the ends
   * only: the index's newest entry processed here must still be there, and the first entry after
   * the snapshot must build on the snapshot (or be the index's creation). A hole in the middle,
   * with both ends kept, is seen only where another node met it (`gap`, D-374): the first entry
   * after what that node applied must build on no more than that.
   */
  private async lostHistory(index: string, gap?: Gap): Promise<HistoryLook> {
    const last = this.host.state.indexes.get(index)?.last ?? 0;
    if (last === 0) return {};
    // Truncation keeps a snapshot's own entry: the newest entry of an index is never removed.
    const tail = await this.host.log.lastSeqOf(index);
    if (tail < last) return { lost: tail === 0 ? "every entry" : `its entries after ${tail}, up to ${last}` };
    const covered = (await this.host.snapshots.pointer(index))?.seq ?? 0;
    if (covered >= last) return { covered };
    const first = await this.host.log.firstEntryOf(index, covered + 1);
    if (first === null) return { covered, first };
    if ((first.entry.after ?? 0) > covered || (covered === 0 && first.entry.op !== "create")) {
      // A newer snapshot truncated behind itself since the pointer was read: the next look decides.
      if (((await this.host.snapshots.pointer(index))?.seq ?? 0) !== covered) return {};
      const lost =
        covered === 0
          ? `its entries before ${first.seq}, its creation among them`
          : `its entries between its snapshot at ${covered} and ${first.seq}`;
      return { lost };
    }
    if (gap === undefined || covered >= gap.needs) return { covered, first };
    const from = Math.max(gap.applied, covered);
    const next = await this.host.log.firstEntryOf(index, from + 1);
    if (next === null || (next.entry.after ?? 0) <= from) return { covered, first };
    if (((await this.host.snapshots.pointer(index))?.seq ?? 0) !== covered) return {};
    return { lost: `its entries between ${from} and ${next.seq}` };
  }

  /**
   * An index's entries wait for a snapshot until 10,000 of them have come (SNAPSHOT_EVERY): a
   * small or quiet index might never have one, and if the log lost its entries after every node
   * holding it was gone, nothing could bring it back. So the oldest entry no snapshot holds gets
   * one once it is snapshotAfterMs old: taken by the node that wrote that entry, or by any node
   * holding the index once it is twice that old (its writer may be gone). Two nodes snapshotting
   * at once cost a snapshot more; the pointer never goes back (Snapshots.truncate).
   */
  private async snapshotIfOld(index: string, look: HistoryLook): Promise<void> {
    const last = this.host.state.indexes.get(index)?.last ?? 0;
    const { covered, first } = look;
    if (covered === undefined || covered >= last || !first || first.seq > last) return;
    const age = Date.now() - first.entry.at;
    if (age < this.snapshotAfterMs || (first.entry.node !== this.host.node && age < 2 * this.snapshotAfterMs)) return;
    const snapshot = await this.host.snapshotNow(index);
    if (snapshot !== undefined) {
      this.host.logger.info("snapshotted an index whose entries no snapshot held for a while", {
        index,
        snapshot: snapshot.seq,
        oldestEntryAgeMs: age,
      });
    }
  }

  /**
   * Makes the index whole again from this node's copy: a snapshot of it, unless one already holds
   * all this node applied, then, when the log lost the index's newest entries, an `anchor` entry
   * for the compare-and-set of its next write to name. A node that lacks the index restores it
   * from the snapshot when it starts or when an entry (the anchor) builds on entries it never
   * applied. Nodes that held more of it than this one keep what they hold.
   */
  private repairHistory(index: string, lost: string): Promise<void> {
    const running = this.repairing.get(index);
    if (running !== undefined) return running;
    const repair = (async () => {
      this.host.logger.error(
        "the change log lost entries of an index (Sift removes them only behind a snapshot): repairing it from this node's copy",
        { index, lost },
      );
      const last = this.host.state.indexes.get(index)?.last ?? 0;
      let covered = (await this.host.snapshots.pointer(index))?.seq ?? 0;
      if (covered < last) {
        const snapshot = await this.host.snapshotNow(index);
        if (snapshot === undefined) return; // dropped meanwhile, or stopping
        covered = Math.max(covered, snapshot.seq);
      }
      const tail = await this.host.log.lastSeqOf(index);
      if (tail < covered) {
        // Names the log's own newest entry of the index: of two nodes anchoring at once, one wins.
        const anchor = { op: "anchor", index, node: this.host.node, at: Date.now(), after: covered } as LogEntry;
        await this.host.log.append(anchor, tail).catch((error: Error) => {
          if (!(error instanceof StaleAppendError)) throw error;
        });
      }
      this.host.logger.warn("repaired the change log's history of an index: other nodes restore it from its snapshot", {
        index,
        snapshot: covered,
      });
    })().finally(() => this.repairing.delete(index));
    this.repairing.set(index, repair);
    return repair;
  }

  /**
   * This node lacks an index the shared store lists (a request for it), or entries of it: the
   * nodes that hold it are told, at most every LACKING_EVERY_MS per index, and look at once at its
   * history (lookAtLacking) instead of at their next periodic look. Not while the node catches up
   * at its start (a new node of a large deployment would ask about every index), unless an entry
   * it reached needs what it lacks (`missed`). An index created a moment ago is lacked too, for
   * milliseconds: the others' look finds nothing.
   */
  lacking(indexId: string, gap?: Gap): void {
    if (!this.host.following() || this.host.state.dropped.has(indexId) || !(this.host.startedUp() || gap)) return;
    const now = Date.now();
    if ((this.lackingSaid.get(indexId) ?? 0) > now - LACKING_EVERY_MS) return;
    this.lackingSaid.set(indexId, now);
    this.host.log.sendNotice?.({ kind: "index-lacking", indexId, node: this.host.node, ...(gap ? { gap } : {}) });
    if (gap === undefined) {
      void this.restoreUnlogged(indexId).catch((error: Error) =>
        this.host.logger.warn("could not restore an index the change log lost from its snapshot", {
          index: indexId,
          error: error.message,
        }),
      );
    }
  }

  /**
   * This node lacks the index, and the log holds no entry of it, yet a snapshot of it exists: the
   * log lost its whole history, perhaps after every node that held it was gone. Restored from the
   * snapshot (D-375); its next write finds the log's end behind it and repairs that (D-369).
   */
  private async restoreUnlogged(index: string): Promise<void> {
    const pointer = await this.host.snapshots.pointer(index);
    if (pointer === null || (await this.host.log.firstEntryOf(index, 1)) !== null) return;
    const restored = await this.host.chains.run(index, async () => {
      // Applied or dropped meanwhile (an entry came after all).
      if (this.host.state.indexes.has(index) || this.host.state.dropped.has(index)) return false;
      await this.host.restoreIndex(index, pointer);
      return true;
    });
    if (!restored) return;
    await this.host.state.save();
    this.host.logger.error("restored an index from its snapshot: the change log holds none of its entries", {
      index,
      snapshot: pointer.seq,
    });
  }

  /**
   * Another node lacks an index: held here, its history is looked at now, repaired if lost.
   * `gap`: where that node's copy stops; a node that has not applied what it needs cannot help.
   */
  lookAtLacking(indexId: string, gap?: Gap): void {
    const r = this.host.state.indexes.get(indexId);
    if (r === undefined || r.last === 0 || this.host.state.dropped.has(indexId) || this.repairing.has(indexId)) return;
    if (this.host.stopping() || r.asideThrough !== undefined || (gap !== undefined && r.last < gap.needs)) return;
    const now = Date.now();
    if ((this.lackingLooked.get(indexId) ?? 0) > now - LACKING_EVERY_MS) return;
    this.lackingLooked.set(indexId, now);
    void this.lostHistory(indexId, gap)
      .then((look) =>
        look.lost === undefined ? this.snapshotFor(indexId, gap, look.covered) : this.repairHistory(indexId, look.lost),
      )
      .catch((error: Error) =>
        this.host.logger.warn("could not look at an index's history another node lacks", {
          index: indexId,
          error: error.message,
        }),
      );
  }

  /**
   * Another node needs a snapshot that holds the index up to `gap.needs` (it set the index aside,
   * D-376): taken from this node's copy when the newest one does not, and this node holds that far.
   */
  private async snapshotFor(index: string, gap: Gap | undefined, covered: number | undefined): Promise<void> {
    if (gap === undefined || (this.host.state.indexes.get(index)?.last ?? 0) < gap.needs) return;
    // The look stopped before the pointer (or saw it move): read it, not take a snapshot in vain.
    if ((covered ?? (await this.host.snapshots.pointer(index))?.seq ?? 0) >= gap.needs) return;
    const snapshot = await this.host.snapshotNow(index);
    if (snapshot !== undefined) {
      this.host.logger.info("snapshotted an index for a node that set it aside", { index, snapshot: snapshot.seq });
    }
  }

  /**
   * An append refused as stale: when the log's newest entry of the index is older than the one
   * this node applied, the log lost it and no catch-up can help. The write is refused with a 503
   * while the index is repaired (repairHistory); one sent again after it goes through.
   */
  async lostNewest(index: string, expectedLast: number): Promise<void> {
    // A log that does not answer here leaves the write stale, as it was.
    const tail = await this.host.log.lastSeqOf(index).catch(() => expectedLast);
    if (tail >= expectedLast) return;
    void this.repairHistory(
      index,
      tail === 0 ? "every entry" : `its entries after ${tail}, up to ${expectedLast}`,
    ).catch((error: Error) =>
      this.host.logger.warn("could not repair the change log's history of an index; the next write tries again", {
        index,
        error: error.message,
      }),
    );
    throw new UnavailableError(
      "the change log lost this index's newest entries; they are being restored from this region's copy, try again shortly",
      { retryAfterSeconds: 2 },
    );
  }
}
