// What one node has applied of the change log, per index, kept in `<dataDir>/replica.json`.
// Saved after the engine made each effect durable (its `sync()` first: D-292), so after a crash
// or power loss the file may lag the engine but never lead it: entries after `position` are
// delivered again and applying them is idempotent.
import { readFileSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { majorOf, minorOf, type VersionId } from "../domain/version-id.ts";

export interface IndexReplica {
  /**
   * Log position of the newest entry of this index processed here (applied, or skipped because
   * another overtook it), all before it processed too.
   */
  last: number;
  /** The version this node serves; undefined until the index's first activation arrives. */
  active: VersionId | undefined;
  /** Majors applied here (kept after retention drops them: "applied" is what minVersion asks). */
  majors: number[];
  /** Per major, the highest minor applied here. */
  maxMinor: Record<string, number>;
  /** When the newest applied entry was appended (epoch ms), for the lag in /readyz. */
  appendedAt: number;
  /** The version the newest accepted entry created (a change, a bulk major, a checkpoint). */
  newest?: VersionId;
  /** Entries of the index processed since its last snapshot mark (replication/snapshots.ts). */
  sinceSnapshot?: number;
  /**
   * Log position of the newest purge of the index: files of its majors published before it still
   * hold the erased record, and no snapshot may reuse them (replication/snapshots.ts).
   */
  purgedAt?: number;
  /**
   * Set while the index is set aside here (D-376): an entry of it failed to apply for minutes, and
   * it and every later one up to this position were passed over. `last` stays the newest applied.
   */
  asideThrough?: number;
  /** The first entry passed over while set aside: a snapshot that holds it can bring the index back. */
  asideFrom?: number;
}

/**
 * A rename per applied entry cost each node a file write per write to any index; at 50 ms the
 * writes (JSON of every index's state, a file write and a rename: system calls, dear here) were
 * still 1.5% of a node's CPU at 250 writes/s. A restart replays at most this much again.
 */
const SAVE_INTERVAL_MS = 500;

interface Persisted {
  position: number;
  indexes: Record<string, IndexReplica>;
  dropped?: string[];
  erasing?: string[];
  watching?: Record<string, WatchedPurge>;
  elsewhere?: Record<string, number>;
}

/** Another node's purge whose copies that node has to remove (see Replica.watchErasure). */
export interface WatchedPurge {
  /** The newest such purge of the index: a removal after it covers the ones before. */
  seq: number;
  writer: string;
}

export class ReplicaState {
  /** Every entry at or before this position is applied. */
  position = 0;
  readonly indexes = new Map<string, IndexReplica>();
  /** Indexes dropped here: a snapshot of one is never restored. */
  readonly dropped = new Set<string>();
  /**
   * Indexes whose purged records' copies this node still has to remove from the log and the
   * object store (replication/snapshots.ts, erase): kept so that a restart carries on.
   */
  readonly erasing = new Set<string>();
  /** Other nodes' purges, per index, until their copies are gone: kept so that a restart watches on. */
  readonly watching = new Map<string, WatchedPurge>();
  /**
   * Indexes held in other regions whose entries this node passed over, each with the newest such
   * entry: taken up from the log (and their snapshots) if this node holds them again (D-390).
   */
  readonly elsewhere = new Map<string, number>();
  /**
   * The position in the file as last written: what the node reports to the others, so that no
   * truncation passes what a restart starts from.
   */
  savedPosition = 0;
  private readonly file: string;
  /** Makes what the engine applied so far durable; run before each save. */
  private readonly beforeSave: () => Promise<void>;
  private saving: Promise<void> | undefined;
  private dirty = false;
  private savedAt = 0;

  constructor(file: string, beforeSave: () => Promise<void> = async () => {}) {
    this.file = file;
    this.beforeSave = beforeSave;
    let raw: string;
    try {
      raw = readFileSync(file, "utf8");
    } catch {
      // No file yet: a node that has applied nothing starts from the beginning.
      return;
    }
    const parsed = JSON.parse(raw) as Persisted;
    this.position = parsed.position;
    this.savedPosition = parsed.position;
    for (const [id, r] of Object.entries(parsed.indexes)) this.indexes.set(id, r);
    for (const id of parsed.dropped ?? []) this.dropped.add(id);
    for (const id of parsed.erasing ?? []) this.erasing.add(id);
    for (const [id, w] of Object.entries(parsed.watching ?? {})) this.watching.set(id, w);
    for (const [id, seq] of Object.entries(parsed.elsewhere ?? {})) this.elsewhere.set(id, seq);
  }

  index(id: string): IndexReplica {
    let r = this.indexes.get(id);
    if (r === undefined) {
      r = { last: 0, active: undefined, majors: [], maxMinor: {}, appendedAt: 0 };
      this.indexes.set(id, r);
    }
    return r;
  }

  /** Whether the entry that made `version` of the index has been applied here. */
  has(id: string, version: VersionId): boolean {
    const r = this.indexes.get(id);
    if (r === undefined) return false;
    const major = majorOf(version);
    const minor = minorOf(version);
    return minor === 0 ? r.majors.includes(major) : (r.maxMinor[major] ?? 0) >= minor;
  }

  noteVersion(id: string, version: VersionId): void {
    const r = this.index(id);
    const major = majorOf(version);
    const minor = minorOf(version);
    if (minor === 0) {
      if (!r.majors.includes(major)) r.majors.push(major);
    } else r.maxMinor[major] = Math.max(r.maxMinor[major] ?? 0, minor);
  }

  /**
   * Writes the state soon; writes coalesce, at most one per SAVE_INTERVAL_MS, and one is always
   * pending after the last change. A file that lags only means entries delivered again.
   */
  save(): Promise<void> {
    this.dirty = true;
    this.saving ??= (async () => {
      while (this.dirty) {
        const wait = this.savedAt + SAVE_INTERVAL_MS - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.dirty = false;
        this.savedAt = Date.now();
        const body: Persisted = {
          position: this.position,
          indexes: Object.fromEntries(this.indexes),
          dropped: [...this.dropped],
          erasing: [...this.erasing],
          watching: Object.fromEntries(this.watching),
          elsewhere: Object.fromEntries(this.elsewhere),
        };
        // Written out before the flush (the per-index records change as entries are applied):
        // everything it counts as applied was applied before the flush began.
        const json = JSON.stringify(body);
        await this.beforeSave();
        const tmp = `${this.file}.tmp`;
        await writeFile(tmp, json);
        await rename(tmp, this.file);
        this.savedPosition = Math.max(this.savedPosition, body.position);
      }
    })().finally(() => {
      this.saving = undefined;
    });
    return this.saving;
  }
}
