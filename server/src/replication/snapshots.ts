// Snapshots and truncation of the change log (docs/replication.md, Catch-up). Every so many
// entries of an index, the node whose entry crossed the mark writes a snapshot of the index as it
// stands at that position: the files of its majors (published once; a bulk major's upload is
// reused), the record changes of its minors, and the replica's own record of it. The index's
// entries behind both the snapshot and every live node's position are then removed from the log.
// A node that finds entries of an index removed past its own position (it was down, or is new)
// restores the index from the newest snapshot and replays the rest of the log.
import type { VersionId } from "../domain/version-id.ts";
import { minorOf } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import type { ChangeLog } from "../ports/change-log.ts";
import type { HeldFiles, RecordChange, SearchEngine } from "../ports/engine.ts";
import type { IndexReplica } from "./replica-state.ts";

export interface SnapshotManifest {
  index: string;
  /** Every entry of the index up to this position is in the snapshot. */
  seq: number;
  at: number;
  node: string;
  replica: IndexReplica;
  majors: {
    major: number;
    parent: VersionId | null;
    records: number;
    files: string;
    /** The log position they were published at (0: when the major was built). */
    publishedAt?: number;
  }[];
  changes: RecordChange[];
}

/** What a snapshot holds, read while the index's entries wait (Snapshots.capture). */
export interface SnapshotCapture {
  index: string;
  replica: IndexReplica;
  majors: { major: number; parent: VersionId | null; records: number; held: HeldFiles }[];
  changes: RecordChange[];
}

/** The newest snapshot of an index, and how far its entries have been removed from the log. */
export interface SnapshotPointer {
  manifest: string;
  seq: number;
  /** Entries of the index before this position may be gone from the log. */
  truncatedBefore: number;
  /** The snapshot this one replaced: kept for a node that read the pointer just before. */
  previous?: { manifest: string; seq: number };
}

interface NodePosition {
  node: string;
  position: number;
  at: number;
}

const pointerName = (index: string) => `snapshots/${index}/latest`;
const manifestName = (index: string, seq: number) => `snapshots/${index}/${seq}/snapshot`;
/** The position in a manifestName; undefined for another document. */
const manifestSeq = (name: string): number | undefined => {
  const at = /\/(\d+)\/snapshot$/.exec(name)?.[1];
  return at === undefined ? undefined : Number(at);
};
const POINTER_SUFFIX = "/latest";
/** How far a purge's clean-up (erase) has gone for the index: `{ through }`, a snapshot's position. */
const erasedName = (index: string) => `snapshots/${index}/erased`;
/**
 * How long an append may take to be confirmed (NatsLog's publish timeout): an entry whose large
 * body was stored before a moment is in the log by then, or never.
 */
const APPEND_TIMEOUT_MS = 10_000;

export class Snapshots {
  private readonly log: ChangeLog;
  private readonly engine: SearchEngine;
  private readonly logger: Logger;
  private readonly node: string;
  readonly every: number;
  readonly goneAfterMs: number;

  constructor(deps: {
    log: ChangeLog;
    engine: SearchEngine;
    logger: Logger;
    node: string;
    every: number;
    goneAfterMs: number;
  }) {
    this.log = deps.log;
    this.engine = deps.engine;
    this.logger = deps.logger;
    this.node = deps.node;
    this.every = deps.every;
    this.goneAfterMs = deps.goneAfterMs;
  }

  /** How often a node says where it is: well within the time after which it counts as gone. */
  get reportEveryMs(): number {
    return Math.min(5_000, Math.floor(this.goneAfterMs / 3));
  }

  /** Tells the others how far this node has applied the log; truncation never passes it. */
  async report(position: number): Promise<void> {
    await this.log.putDoc(`nodes/${this.node}`, { node: this.node, position, at: Date.now() } satisfies NodePosition);
  }

  /**
   * Reads what a snapshot of the index holds, as this node holds it now. The caller holds the
   * index's chain (no entry of it is applied meanwhile) and passes the replica's record of it.
   * Cheap, so that the index's later entries wait as little as possible: the majors' files are
   * held as they are, not published; `publish` does that after the chain is let go.
   */
  async capture(index: string, replica: IndexReplica): Promise<SnapshotCapture> {
    const majors: SnapshotCapture["majors"] = [];
    try {
      for (const v of await this.engine.versions(index)) {
        if (minorOf(v.version) !== 0) continue;
        const held = await this.engine.holdSegmentFiles!(index, Number(v.version));
        majors.push({ major: Number(v.version), parent: v.parent, records: v.records, held });
      }
      return { index, replica: structuredClone(replica), majors, changes: await this.engine.changes!(index) };
    } catch (error) {
      await Promise.all(majors.map((m) => m.held.release()));
      throw error;
    }
  }

  /**
   * Writes a captured snapshot: the files of its majors not published yet (reusing those the
   * previous snapshot or a bulk upload published), then its manifest. Lets the held files go,
   * whatever happens.
   */
  async publish(capture: SnapshotCapture): Promise<SnapshotManifest> {
    try {
      const { index, replica } = capture;
      const seq = replica.last;
      const previous = await this.pointer(index);
      const reusable = new Map<number, SnapshotManifest["majors"][number]>();
      if (previous) {
        const old = await this.log.getDoc<SnapshotManifest>(previous.manifest);
        for (const m of old?.majors ?? []) reusable.set(m.major, m);
      }
      // Files published before the newest purge still hold the erased record: published again.
      const purgedAt = replica.purgedAt ?? 0;
      const majors: SnapshotManifest["majors"] = [];
      for (const { major, parent, records, held } of capture.majors) {
        const before = reusable.get(major);
        // A bulk major was published when it was built; a checkpoint is published here, once.
        let files = "";
        let publishedAt = 0;
        if (before && (before.publishedAt ?? 0) >= purgedAt) {
          files = before.files;
          publishedAt = before.publishedAt ?? 0;
        } else if (!before && purgedAt === 0 && !held.publishedWithoutBase) {
          // A layered checkpoint's own set lacks its base (D-353): a node restoring from the
          // snapshot holds no segment to link, so the snapshot publishes it whole.
          files = `segments/${index}/${major}`;
        }
        if (files === "" || !(await this.log.hasFiles(files))) {
          files = `snapshots/${index}/${seq}/majors/${major}`;
          publishedAt = seq;
          await this.log.putFiles(files, held.files, { background: true });
        }
        majors.push({ major, parent, records, files, publishedAt });
      }
      const manifest: SnapshotManifest = {
        index,
        seq,
        at: Date.now(),
        node: this.node,
        replica,
        majors,
        changes: capture.changes,
      };
      await this.log.putDoc(manifestName(index, seq), manifest);
      return manifest;
    } finally {
      await Promise.all(capture.majors.map((m) => m.held.release()));
    }
  }

  /**
   * Removes the index's entries that the snapshot holds and every live node has applied. The
   * pointer is written first: a node that reads it restores from the snapshot even if the
   * removal itself then fails, which is slower but loses nothing.
   */
  async truncate(index: string, snapshot: SnapshotManifest): Promise<number> {
    // The snapshot's own entry stays: a subject with no entry left would refuse every append
    // after it, since each one expects the index's last position (the compare-and-set).
    const bound = (live: NodePosition[]) => Math.min(snapshot.seq, ...live.map((p) => p.position + 1));
    const said = bound(await this.livePositions());
    const replaced = await this.pointer(index);
    // Two nodes may snapshot one index at about the same time: the pointer never goes back, or a
    // node restoring from it would miss the entries the newer truncation removed.
    if (replaced && replaced.seq >= snapshot.seq) {
      if (replaced.seq > snapshot.seq) await this.discard(snapshot, "a newer one had replaced while it was taken");
      return replaced.truncatedBefore;
    }
    const previous = replaced && { manifest: replaced.manifest, seq: replaced.seq };
    await this.pointTo(index, snapshot.seq, said, previous);
    // Another node may have read the pointer when this one did and written it first, for a newer
    // snapshot: this write took the pointer back behind what that truncation cut from the log (a
    // purge's clean-up then gave up, leaving the record in the older snapshot). Its manifest was
    // written before it read the pointer, so it is listed now: the pointer goes forward again,
    // saying the log may be cut up to it (more than it may be: a node behind it restores).
    const newest = await this.newestManifest(index);
    if (newest > snapshot.seq) {
      await this.pointTo(index, newest, newest, { manifest: manifestName(index, snapshot.seq), seq: snapshot.seq });
      return newest;
    }
    // Asked again after the pointer is out: a node starting meanwhile either reported before this
    // look (and is counted) or reads the pointer after it (and restores from the snapshot).
    const live = await this.livePositions();
    const before = Math.min(said, bound(live));
    await this.log.truncate(index, before);
    this.logger.info("truncated the change log of an index behind its snapshot", {
      index,
      snapshot: snapshot.seq,
      before,
      liveNodes: live.length,
    });
    if (previous) {
      await this.collect(index, snapshot, previous, before).catch((error: Error) =>
        this.logger.warn("could not remove files no snapshot or entry needs; the next snapshot tries again", {
          index,
          error: error.message,
        }),
      );
    }
    return before;
  }

  /**
   * Removes what nothing can ask for any more, once the log no longer holds the entries up to the
   * previous snapshot: the files of majors that neither this snapshot nor the previous one holds
   * (dropped majors, checkpoints an older snapshot published, uploads whose entry never made it),
   * older snapshots, and entries too large for a message. Judged against the previous snapshot,
   * not this one: every major it lacks was dropped before it, so the entry that made the major is
   * gone from the log too. Files published within SIFT_REPLICATION_NODE_GONE_MS before it stay,
   * for an upload published before a snapshot whose entry comes after it.
   */
  private async collect(
    index: string,
    current: SnapshotManifest,
    previous: { manifest: string; seq: number },
    before: number,
  ): Promise<void> {
    if (before <= previous.seq) return;
    const older = await this.log.getDoc<SnapshotManifest>(previous.manifest);
    if (older === null) return;
    const keep = new Set([...current.majors, ...older.majors].map((m) => m.files));
    const until = older.at - this.goneAfterMs;
    const files = await this.deletePublished(index, (p) => !keep.has(p.name) && p.at < until);
    const snapshots = await this.deleteSnapshotsBefore(index, previous.seq);
    const entries = await this.log.deleteLargeEntries(index, until);
    // Parts of uploads and snapshots whose publisher died before their manifest: no entry names them.
    const unfinished = await this.log.deleteUnfinished(index, until);
    if (files + snapshots + entries + unfinished > 0) {
      this.logger.info("removed files no snapshot or log entry needs", {
        index,
        files,
        snapshots,
        entries,
        unfinished,
      });
    }
  }

  /**
   * After a purge (D-277): the record's other copies go, instead of two snapshots later. The
   * caller took `snapshot` right after applying the purge, with the index's majors published
   * again without the record, and truncated behind it as far as the live nodes allowed. Once an
   * append that stored its entry before the snapshot can no longer arrive (the log's append
   * timeout), and every live node has applied what the log then holds of the index: its entries
   * before the snapshot, the files of the majors it had applied (not those of uploads still on
   * their way), older snapshots, and large entries no entry left in the log names are removed.
   * Resolves with what went, or undefined when it gave up (stopping, or a node that does not
   * catch up within ten times SIFT_REPLICATION_NODE_GONE_MS).
   */
  async erase(
    index: string,
    snapshot: SnapshotManifest,
    stopping: () => boolean,
    settleMs = APPEND_TIMEOUT_MS,
  ): Promise<{ files: number; snapshots: number; entries: number } | undefined> {
    const until = Date.now() + 10 * this.goneAfterMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, snapshot.at + settleMs - Date.now())));
    if (!(await this.allApplied(await this.log.lastSeqOf(index), until, stopping))) return undefined;
    // The pointer says how far the log is cut before the cut is made, as truncate() does: a node
    // counted as gone that holds less restores from the snapshot instead of missing entries.
    const pointer = await this.pointer(index);
    const kept: SnapshotManifest[] = [snapshot];
    if (pointer === null) return undefined;
    if (pointer.seq > snapshot.seq) {
      const newer = await this.log.getDoc<SnapshotManifest>(pointer.manifest);
      if (newer) kept.push(newer);
    }
    if (pointer.seq < snapshot.seq) {
      // A truncation behind an older snapshot wrote the pointer after this one's: forward again.
      await this.pointTo(index, snapshot.seq, snapshot.seq, { manifest: pointer.manifest, seq: pointer.seq });
    } else if (pointer.truncatedBefore < snapshot.seq) {
      await this.log.putDoc(pointerName(index), {
        ...pointer,
        truncatedBefore: snapshot.seq,
      } satisfies SnapshotPointer);
    }
    await this.log.truncate(index, snapshot.seq);
    const keep = new Set(kept.flatMap((m) => m.majors.map((major) => major.files)));
    const applied = new Set(snapshot.replica.majors);
    const files = await this.deletePublished(index, (p) => {
      if (keep.has(p.name)) return false;
      // An upload or checkpoint published before its entry: not applied everywhere yet.
      const major = p.name.startsWith(`segments/${index}/`) ? Number(p.name.split("/").at(-1)) : undefined;
      if (major !== undefined) return applied.has(major);
      // A snapshot's own set: older ones go, a newer one being written stays.
      const seq = Number(/^snapshots\/.+\/(\d+)\/majors\//.exec(p.name)?.[1] ?? Number.NaN);
      return seq < snapshot.seq;
    });
    const snapshots = await this.deleteSnapshotsBefore(index, snapshot.seq);
    // Those of entries still in the log stay (a node restored from the snapshot replays them),
    // and those stored too lately to be in it yet.
    const entries = await this.log.deleteLargeEntries(index, Date.now() - settleMs, { exceptFrom: snapshot.seq });
    // For the other nodes, which take this over should its writer be gone for good (watchErasure).
    if (snapshot.seq > (await this.erasedThrough(index))) {
      await this.log.putDoc(erasedName(index), { through: snapshot.seq });
    }
    this.logger.info("removed a purged record's copies from the log and the object store", {
      index,
      snapshot: snapshot.seq,
      files,
      snapshots,
      entries,
    });
    return { files, snapshots, entries };
  }

  /**
   * After an index was dropped by the entry at `seq`, once every live node has applied it: its
   * snapshot pointer first (so that no node restores it), its other documents, its entries before
   * the drop (the drop itself stays, for a node that comes back), its published files and its
   * large entries. A live node that has not applied the drop after ten times
   * SIFT_REPLICATION_NODE_GONE_MS leaves it all in place.
   */
  async clearDropped(index: string, seq: number, stopping: () => boolean): Promise<void> {
    if (!(await this.allApplied(seq, Date.now() + 10 * this.goneAfterMs, stopping))) return;
    await this.log.deleteDoc(pointerName(index));
    for (const name of await this.log.listDocs(`snapshots/${index}/`)) await this.log.deleteDoc(name);
    await this.log.truncate(index, seq);
    const files = await this.deletePublished(index, () => true);
    const entries = await this.log.deleteLargeEntries(index, Date.now());
    const unfinished = await this.log.deleteUnfinished(index, Date.now());
    this.logger.info("cleared a dropped index from the log and the object store", {
      index,
      files,
      entries,
      unfinished,
    });
  }

  /**
   * Removes a snapshot no node will restore from: its document and the files it published itself.
   * One finished after a newer one was pointed to, which the clean-ups that ran meanwhile (a
   * purge's above all, D-277) could not see: it held a purged record when it was taken before the
   * purge and written after that purge's clean-up (seen in the purge test under load). Or one of
   * an index dropped while it was published.
   */
  async discard(snapshot: SnapshotManifest, reason: string): Promise<void> {
    const own = `snapshots/${snapshot.index}/${snapshot.seq}/`;
    for (const m of snapshot.majors) if (m.files.startsWith(own)) await this.log.deleteFiles(m.files);
    await this.log.deleteDoc(manifestName(snapshot.index, snapshot.seq));
    this.logger.info(`removed a snapshot ${reason}`, { index: snapshot.index, snapshot: snapshot.seq });
  }

  /** Points the index at its snapshot taken at `seq`. */
  private async pointTo(
    index: string,
    seq: number,
    truncatedBefore: number,
    previous: SnapshotPointer["previous"] | null,
  ): Promise<void> {
    await this.log.putDoc(pointerName(index), {
      manifest: manifestName(index, seq),
      seq,
      truncatedBefore,
      ...(previous ? { previous } : {}),
    } satisfies SnapshotPointer);
  }

  /** The position of the index's newest snapshot document (0: none). */
  private async newestManifest(index: string): Promise<number> {
    let newest = 0;
    for (const name of await this.log.listDocs(`snapshots/${index}/`))
      newest = Math.max(newest, manifestSeq(name) ?? 0);
    return newest;
  }

  /** Deletes the index's snapshot documents taken before position `seq`; returns how many went. */
  private async deleteSnapshotsBefore(index: string, seq: number): Promise<number> {
    let deleted = 0;
    for (const name of await this.log.listDocs(`snapshots/${index}/`)) {
      const at = manifestSeq(name);
      if (at === undefined || at >= seq) continue;
      await this.log.deleteDoc(name);
      deleted++;
    }
    return deleted;
  }

  /** Deletes the index's published files that `chosen` picks; returns how many sets went. */
  private async deletePublished(index: string, chosen: (p: { name: string; at: number }) => boolean): Promise<number> {
    const doomed = (await this.log.listPublished(index)).filter(chosen);
    for (const published of doomed) await this.log.deleteFiles(published.name);
    return doomed.length;
  }

  /** Waits until every live node has applied `seq`; false when stopping or past `until`. */
  private async allApplied(seq: number, until: number, stopping: () => boolean): Promise<boolean> {
    while ((await this.livePositions()).some((p) => p.position < seq)) {
      if (stopping() || Date.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, this.reportEveryMs));
    }
    return !stopping();
  }

  /** The position of the newest snapshot a purge's clean-up of the index finished behind (0: none). */
  async erasedThrough(index: string): Promise<number> {
    return (await this.log.getDoc<{ through: number }>(erasedName(index)))?.through ?? 0;
  }

  /** The nodes that reported lately, by id. */
  async liveNodes(): Promise<string[]> {
    return (await this.livePositions()).map((p) => p.node);
  }

  /** Nodes that reported lately; one that has not is gone and will restore from a snapshot. */
  private async livePositions(): Promise<NodePosition[]> {
    const since = Date.now() - this.goneAfterMs;
    const positions: NodePosition[] = [];
    for (const name of await this.log.listDocs("nodes/")) {
      const p = await this.log.getDoc<NodePosition>(name);
      if (p !== null && p.at >= since) positions.push(p);
    }
    return positions;
  }

  /** `nearby`: the region's copy may answer while the log's home does not (see ChangeLog.getDoc). */
  async pointer(index: string, options?: { nearby?: boolean }): Promise<SnapshotPointer | null> {
    return this.log.getDoc<SnapshotPointer>(pointerName(index), options);
  }

  /** Every index that has a snapshot, with its pointer. */
  async pointers(): Promise<Map<string, SnapshotPointer>> {
    const found = new Map<string, SnapshotPointer>();
    for (const name of await this.log.listDocs("snapshots/")) {
      if (!name.endsWith(POINTER_SUFFIX)) continue;
      const index = name.slice("snapshots/".length, -POINTER_SUFFIX.length);
      const pointer = await this.log.getDoc<SnapshotPointer>(name);
      if (pointer !== null) found.set(index, pointer);
    }
    return found;
  }

  /**
   * Replaces the engine's copy of the index with the snapshot; resolves with the replica's record
   * of it as of the snapshot. The caller holds the index's chain.
   */
  async restore(index: string, pointer: SnapshotPointer): Promise<SnapshotManifest> {
    // Written once under its name: a region's copy of it, read while the home is out of reach, is it.
    const manifest = await this.log.getDoc<SnapshotManifest>(pointer.manifest, { nearby: true });
    if (manifest === null) {
      // Replaced and cleared away since the pointer was read: the newer one holds more.
      const newer = await this.pointer(index);
      if (newer !== null && newer.seq > pointer.seq) return this.restore(index, newer);
      throw new Error(`snapshot ${pointer.manifest} is missing from the object store`);
    }
    await this.engine.dropIndex(index);
    await this.engine.createIndex(index);
    for (const m of manifest.majors) {
      await this.engine.importMajor!(index, { major: m.major, parent: m.parent, records: m.records }, (dir) =>
        this.log.getFiles(m.files, dir).then(() => undefined),
      );
    }
    for (const change of manifest.changes) await this.engine.applyChange(index, change);
    const active = manifest.replica.active;
    if (active !== undefined && (await this.engine.has!(index, active))) await this.engine.activate(index, active);
    return manifest;
  }
}
