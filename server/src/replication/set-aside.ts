// An index set aside on a node (D-376, docs/replication.md, "An entry a node cannot apply"): an
// entry of it failed to apply for minutes, so the node passes over that entry and the index's later
// ones instead of waiting behind them with every other index, answers 503 for the index, asks the
// other nodes for a snapshot that holds it, and brings the index back when it can.
import { UnavailableError } from "../domain/errors.ts";
import type { ChangeLog, LogEntry } from "../ports/change-log.ts";
import type { IndexLocks } from "../services/versions/lock.ts";
import type { LogHistory } from "./history.ts";
import type { ReplicaHost, Verdict } from "./replica-host.ts";
import type { SnapshotManifest, SnapshotPointer } from "./snapshots.ts";

/**
 * An entry that has failed to apply for this long sets its index aside on this node: its later
 * entries would otherwise wait behind it, and with them this node's position, readiness and every
 * index's truncation.
 */
const SET_ASIDE_AFTER_MS = 2 * 60_000;

/** A set-aside index asks for the snapshot that brings it back at most this often. */
export const ASIDE_LOOK_EVERY_MS = 1_000;

/** What setting an index aside uses of its node's replica. */
export interface SetAsideHost extends ReplicaHost {
  log: Pick<ChangeLog, "firstEntryOf">;
  history: Pick<LogHistory, "lacking">;
  /** The replica's lock per index: bringing an index back runs under it. */
  chains: IndexLocks;
  saveSoon(): void;
  /** Gives the writer of this node's own entry its outcome. */
  keepVerdict(seq: number, verdict: Verdict): void;
  restoreIndex(index: string, pointer: SnapshotPointer): Promise<SnapshotManifest>;
  /** Applies one entry of the index (the caller holds its chain). */
  apply(seq: number, entry: LogEntry): Promise<void>;
}

export class SetAside {
  private readonly host: SetAsideHost;
  /** How long an entry may fail before its index is set aside (SET_ASIDE_AFTER_MS). */
  readonly afterMs: number;
  /** When each set-aside index last looked for the snapshot that brings it back. */
  private readonly looked = new Map<string, number>();

  constructor(host: SetAsideHost, afterMs: number | undefined) {
    this.host = host;
    this.afterMs = afterMs ?? SET_ASIDE_AFTER_MS;
  }

  /** Whether the index is set aside on this node: it answers 503 for it until it is brought back. */
  has(index: string): boolean {
    return this.host.state.indexes.get(index)?.asideThrough !== undefined;
  }

  /** A request for a set-aside index: the others are told, and the index is brought back if it can be. */
  asked(index: string): void {
    const r = this.host.state.indexes.get(index);
    if (r?.asideThrough === undefined) return;
    this.host.history.lacking(index, { applied: r.last, needs: r.asideThrough });
    if ((this.looked.get(index) ?? 0) <= Date.now() - ASIDE_LOOK_EVERY_MS) {
      void this.host.chains.run(index, () => this.bringBack(index));
    }
  }

  /**
   * An entry of the index failed to apply for afterMs (a hole in its history no node can
   * fill, a file missing from the object store, a disk that refuses it): the index is set aside
   * here. This entry and its later ones are passed over, so that they hold up neither the other
   * indexes nor this node's position; the index answers 503 here until bringBack applies them (or
   * a snapshot that holds the entry that failed, which the nodes that hold it are asked for).
   */
  begin(seq: number, entry: LogEntry, error: Error): void {
    const r = this.host.state.index(entry.index);
    r.asideFrom = seq;
    r.asideThrough = seq;
    this.host.logger.error(
      "set an index aside on this node: an entry of it could not be applied; it answers 503 here until it is brought back",
      {
        index: entry.index,
        seq,
        applied: r.last,
        error: error.message,
      },
    );
    this.host.history.lacking(entry.index, { applied: r.last, needs: seq });
    this.host.saveSoon();
  }

  /** An entry of a set-aside index: passed over, counted into the position like an applied one. */
  pass(seq: number, entry: LogEntry): void {
    const r = this.host.state.index(entry.index);
    r.asideThrough = Math.max(r.asideThrough ?? 0, seq);
    if (entry.node === this.host.node) {
      this.host.keepVerdict(seq, {
        accepted: true,
        error: new UnavailableError("this node cannot apply the index's changes at this moment; try another region", {
          retryAfterSeconds: 2,
        }),
      });
    }
    this.host.history.lacking(entry.index, { applied: r.last, needs: r.asideThrough });
  }

  /**
   * Tries to bring a set-aside index back; true when it is (or already was) back. The entries
   * passed over are read again from the log and applied (a truncation keeps what follows a
   * snapshot, and an entry building on removed ones restores from the snapshot as usual); first,
   * a snapshot that holds the first entry that failed here (another node applied it) replaces
   * this node's copy, so that an entry failing here for good is not needed. At most every
   * ASIDE_LOOK_EVERY_MS. Holds its chain.
   */
  async bringBack(index: string): Promise<boolean> {
    const r = this.host.state.indexes.get(index);
    if (r?.asideThrough === undefined) return true;
    const now = Date.now();
    if ((this.looked.get(index) ?? 0) > now - ASIDE_LOOK_EVERY_MS) return false;
    this.looked.set(index, now);
    const through = r.asideThrough;
    let next = r.last + 1;
    try {
      const pointer = await this.host.snapshots.pointer(index);
      if (pointer !== null && pointer.seq >= (r.asideFrom ?? through) && pointer.seq > r.last) {
        await this.host.restoreIndex(index, pointer);
        next = pointer.seq + 1;
      }
      for (;;) {
        const entry = await this.host.log.firstEntryOf(index, next);
        if (entry === null || entry.seq > through) break;
        next = entry.seq;
        await this.host.apply(entry.seq, entry.entry);
        next = entry.seq + 1;
      }
    } catch (error) {
      // Still aside, from the first entry not applied.
      const copy = this.host.state.index(index);
      copy.asideFrom = next;
      copy.asideThrough = Math.max(through, copy.asideThrough ?? 0);
      this.host.saveSoon();
      this.host.logger.warn("could not bring a set-aside index back yet; trying again", {
        index,
        from: next,
        error: (error as Error).message,
      });
      return false;
    }
    const copy = this.host.state.index(index);
    delete copy.asideFrom;
    delete copy.asideThrough;
    this.looked.delete(index);
    this.host.saveSoon();
    this.host.logger.warn("brought a set-aside index back", { index, through });
    return true;
  }
}
