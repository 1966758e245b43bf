// What a node does with the indexes of services whose regions do not include its own (D-385,
// docs/replication.md, "Data placement"): it passes over their entries and removes its copies,
// noting each index passed over, and takes an index up again from the log and its snapshots when
// it holds it once more (D-389, D-390). Placement (placement.ts) says which indexes it holds.
import { UnavailableError } from "../domain/errors.ts";
import type { LogEntry } from "../ports/change-log.ts";
import type { SearchEngine } from "../ports/engine.ts";
import type { IndexLocks } from "../services/versions/lock.ts";
import type { LogHistory } from "./history.ts";
import type { Placement } from "./placement.ts";
import type { ReplicaHost, Verdict } from "./replica-host.ts";
import { ASIDE_LOOK_EVERY_MS } from "./set-aside.ts";
import type { StoreBackfill } from "./store-backfill.ts";

/** What the indexes held elsewhere use of their node's replica. */
export interface ElsewhereHost extends ReplicaHost {
  /** The node's own engine: a copy of an index held elsewhere is dropped from it. */
  engine: Pick<SearchEngine, "dropIndex">;
  backfill: Pick<StoreBackfill, "forget">;
  history: Pick<LogHistory, "lacking">;
  /** The replica's lock per index: a copy is dropped or taken up under it. */
  chains: IndexLocks;
  /** Whether the node has applied what the log held when it started. */
  startedUp(): boolean;
  isAside(index: string): boolean;
  /** Gives the writer of this node's own entry its outcome. */
  keepVerdict(seq: number, verdict: Verdict): void;
  /** Brings the copy of an index to its entries before `before` (the replica's fillIn). */
  fillIn(index: string, before: number, needs: number): Promise<{ held: boolean }>;
}

export class HeldElsewhere {
  private readonly host: ElsewhereHost;
  private readonly placement: Placement;
  /** When a request last made this node take up an index it passed over (lacks, D-390). */
  private readonly takeUpLooked = new Map<string, number>();

  constructor(host: ElsewhereHost, placement: Placement) {
    this.host = host;
    this.placement = placement;
  }

  /** Whether this node holds the index (its service names this region, or has no region running Sift). */
  holds(index: string): Promise<boolean> {
    return this.placement.holds(index);
  }

  /**
   * Once started: the copies of indexes held elsewhere go, and the indexes passed over that this
   * node holds now are taken up (release, takeUpHeld).
   */
  async started(): Promise<void> {
    await this.release().catch((error: Error) =>
      this.host.logger.warn("could not remove the copies of indexes held in other regions", { error: error.message }),
    );
    await this.takeUpHeld().catch((error: Error) =>
      this.host.logger.warn("could not take up the indexes passed over here; a request for one tries again", {
        error: error.message,
      }),
    );
  }

  /**
   * Asked for an index it has not got: said (and restored, if the log lost it) only when this node
   * holds it; taken up when it was passed over here before and not taken up at the start (the log
   * or the store out of reach then).
   */
  lacks(indexId: string): void {
    const placement = this.placement;
    if (placement.elsewhere(indexId)) return;
    void placement.holds(indexId).then((held) => {
      if (!held) return;
      this.host.history.lacking(indexId);
      if (
        this.host.startedUp() &&
        this.host.state.elsewhere.has(indexId) &&
        (this.takeUpLooked.get(indexId) ?? 0) <= Date.now() - ASIDE_LOOK_EVERY_MS
      ) {
        this.takeUpLooked.set(indexId, Date.now());
        void this.takeUp(indexId);
      }
    });
  }

  /**
   * An entry of an index this node does not hold: passed over, counted into the position. What the
   * node took of the index before it knew (its creation's entries come before its store row) goes.
   */
  async pass(seq: number, entry: LogEntry): Promise<void> {
    await this.dropCopy(entry.index, seq);
    if (entry.node === this.host.node) {
      this.host.keepVerdict(seq, {
        accepted: true,
        error: new UnavailableError("this region does not hold the index; ask a region of its service", {
          retryAfterSeconds: 1,
        }),
      });
    }
  }

  /**
   * Removes this node's copy of an index held in other regions (in the index's chain), and notes
   * the index as passed over, to take it up if this node holds it again (D-390).
   */
  private async dropCopy(index: string, seq?: number): Promise<void> {
    this.host.state.elsewhere.set(index, seq ?? this.host.state.indexes.get(index)?.last ?? 0);
    if (!this.host.state.indexes.has(index)) return;
    this.host.state.indexes.delete(index);
    this.host.state.watching.delete(index);
    this.host.backfill.forget(index);
    await this.host.engine
      .dropIndex(index)
      .catch((error: Error) =>
        this.host.logger.warn("could not remove an index held in other regions", { index, error: error.message }),
      );
    this.host.logger.info("an index held in other regions: removed its copy here", { index, ...(seq ? { seq } : {}) });
  }

  /**
   * Once started: the copies of indexes this node held and holds no longer go, without waiting for
   * an entry of theirs. That happens when a region of their service gets its endpoint: until then
   * every region held them (D-385), and an index that gets no write would keep its records here,
   * in a region its service does not name (D-389). An index whose regions cannot be read is kept.
   */
  private async release(): Promise<void> {
    const placement = this.placement;
    let released = 0;
    for (const index of [...this.host.state.indexes.keys()]) {
      if (this.host.stopping()) break;
      if (await placement.holds(index)) continue;
      await this.host.chains.run(index, () => this.dropCopy(index));
      released++;
    }
    if (released > 0) await this.host.state.save();
  }

  /**
   * Once started: the indexes whose entries this node passed over and that it holds now are taken
   * up, without waiting for a write to them. That happens when the only regions of their service
   * that ran Sift lose their endpoints: the indexes fall to every region (D-385), and this node's
   * position is past their entries (D-390).
   */
  private async takeUpHeld(): Promise<void> {
    const placement = this.placement;
    for (const index of [...this.host.state.elsewhere.keys()]) {
      if (this.host.stopping()) break;
      if (await placement.holds(index)) await this.takeUp(index);
    }
  }

  /**
   * An index this node passed over and holds now: its entries up to this node's position are
   * applied from the log, from its newest snapshot where the log no longer holds them (the
   * replica's fillIn). Until then it answers as an index not applied yet (503). In the index's
   * chain: its entries after that position wait, then apply as usual. A failure is logged; a
   * request for the index tries again (lacks).
   */
  private async takeUp(index: string): Promise<void> {
    try {
      await this.host.chains.run(index, async () => {
        if (!this.host.state.elsewhere.has(index)) return;
        const before = this.host.state.indexes.get(index)?.last ?? 0;
        // A set-aside copy is brought back its own way (set-aside.ts).
        if (this.host.state.dropped.has(index) || this.host.isAside(index)) {
          this.host.state.elsewhere.delete(index);
          return;
        }
        // Said first: a large index's entries take a while, and it answers 503 here meanwhile.
        this.host.logger.warn("taking up an index held here now: reading its entries passed over", {
          index,
          through: this.host.state.position,
        });
        const pointer = await this.host.snapshots.pointer(index);
        // Entries passed over here are at or before the position; later ones come as usual.
        if (!(await this.host.fillIn(index, this.host.state.position + 1, pointer?.seq ?? 0)).held) {
          throw new Error("neither the change log nor a snapshot holds its entries");
        }
        this.host.state.elsewhere.delete(index);
        const last = this.host.state.indexes.get(index)?.last ?? 0;
        if (last > before) {
          const message = "took up an index held here now: applied its entries passed over while other regions held it";
          this.host.logger.warn(message, { index, last });
        }
      });
      await this.host.state.save();
    } catch (error) {
      this.host.logger.warn("could not take up an index held here again; a request for it tries again", {
        index,
        error: (error as Error).message,
      });
    }
  }
}
