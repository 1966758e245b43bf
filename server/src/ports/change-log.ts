// The change-log port (docs/replication.md): the replicated, ordered log every node applies to
// its own engine. One subject per index; an append names the last sequence its writer has seen
// on that subject, so two nodes writing the same index at once cannot both win (the loser
// catches up and retries). The adapter is NATS JetStream (replication/nats/).
import type { RecordChange, VersionId } from "./engine.ts";
import type { NodeNotice } from "./node-notices.ts";

/** What one log entry does to one index; every node applies it to its own engine, in order. */
export type LogOp =
  | { op: "create" }
  | { op: "drop-index" }
  /** A record change: a new minor version (a purge's audit version too). */
  | { op: "change"; change: RecordChange }
  /**
   * Record changes queued on one index, each on the one before (group commit): one entry, one
   * decision, each change still its own minor version.
   */
  | { op: "changes"; changes: RecordChange[] }
  /** A bulk major, built once by the node that ingested it and published as segment files. */
  | { op: "bulk"; major: number; records: number; files: string }
  /**
   * A checkpoint of `from` as a new major. Without `files`, each node writes it from the same
   * version, in the index's chain. With them it was built once by the writer and published; each
   * node opens the files, applies `carry` (the writes made while it was built) as its first minor
   * and makes the result live, if `expectActive` is still live (D-231).
   */
  | {
      op: "checkpoint";
      from: VersionId;
      major: number;
      files?: string;
      records?: number;
      carry?: RecordChange;
      expectActive?: VersionId;
      /** False: kept as a rollback point, not made live (another version went live meanwhile). */
      live?: boolean;
    }
  /** `expectActive`: only if that is still the active version (a checkpoint going live). */
  | { op: "activate"; version: VersionId; expectActive?: VersionId }
  | { op: "drop-version"; version: VersionId }
  /** Several at once: retention after a checkpoint drops hundreds of minors (D-224). */
  | { op: "drop-versions"; versions: VersionId[] }
  /** Erasure of a record from every version (docs/versions.md, Erasure). */
  | { op: "purge"; id: string }
  /**
   * Changes nothing: appended after the log lost the index's newest entries (D-369), so that its
   * compare-and-set has an entry to name again, after a snapshot that holds what was lost.
   */
  | { op: "anchor" };

export type LogEntry = LogOp & {
  /** The index's stable key (its id). */
  index: string;
  /** The node that appended it (its log lines name it). */
  node: string;
  /** When it was appended, epoch ms; replication lag is measured from it. */
  at: number;
  /**
   * The index's last position its writer had applied when it appended this entry. A node whose
   * own last position of the index is lower missed entries.
   */
  after?: number;
};

/** The newest entry of an index, as `ChangeLog.lastEntryOf` reads it. */
export interface EntryTail {
  seq: number;
  at: number;
  version?: VersionId | undefined;
}

/** The newest version an entry makes, if it makes one (record changes, uploads, checkpoints). */
export function newestVersionOf(entry: LogEntry): VersionId | undefined {
  switch (entry.op) {
    case "change":
      return entry.change.version;
    case "changes":
      return entry.changes.at(-1)?.version;
    case "bulk":
      return String(entry.major);
    case "checkpoint":
      return entry.carry?.version ?? String(entry.major);
    default:
      return undefined;
  }
}

export interface AppliedEntry {
  /** Position in the whole log (1-based, gap-free order of application). */
  seq: number;
  entry: LogEntry;
}

export interface PutFilesOptions {
  background?: boolean;
  clientWaits?: boolean;
}

export interface ChangeLog {
  /**
   * Appends `entry` if the last entry of its index is still `expectedLast` (0: none yet; undefined:
   * no expectation), and
   * resolves once the log holds it durably (a quorum of its replicas) with its position. Rejects
   * with StaleAppendError when another entry for the index came first.
   */
  append(entry: LogEntry, expectedLast: number | undefined): Promise<number>;
  /** The position of the newest entry (0 when empty). */
  lastSeq(): Promise<number>;
  /**
   * The position of the newest entry the node's own region holds: its mirror's, when it reads
   * one (answers while the log's home is out of reach); the log's otherwise.
   */
  lastSeqNearby?(): Promise<number>;
  /**
   * True while the log's home has not answered since it was out of reach as the log opened (a
   * node started during an outage of the home's cluster): its end is then asked for briefly.
   * Waits for a log still being opened.
   */
  homeAway?(): Promise<boolean>;
  /** The position of the newest entry of one index (0 when it has none). */
  lastSeqOf(indexKey: string): Promise<number>;
  /**
   * The newest entry of one index: its position, when the log took it (epoch ms) and the newest
   * version it makes (`newestVersionOf`; absent for entries the log holds in its object store);
   * null when it has none.
   */
  lastEntryOf(indexKey: string): Promise<EntryTail | null>;
  /**
   * The oldest entry of one index at or after `fromSeq`, read whole; null when it has none there.
   * Reads the log's home, as lastSeqOf does.
   */
  firstEntryOf(indexKey: string, fromSeq: number): Promise<AppliedEntry | null>;
  /** The oldest position still held (the log may be truncated behind checkpoints). */
  firstSeq(): Promise<number>;
  /** When the log took its first entry at or after `seq` (epoch ms); undefined when none is held. */
  entryTimeFrom(seq: number): Promise<number | undefined>;
  /**
   * Delivers every entry from `fromSeq` on, in order, then each new one as it is appended, until
   * the returned stop is called. `deliver` is awaited before the next entry is handed over.
   */
  follow(fromSeq: number, deliver: (applied: AppliedEntry) => Promise<void>): { stop(): Promise<void> };
  /**
   * Publishes the files of a segment under `name` (replicated like the log). A new major's files
   * are fetched by the other nodes while they are published; this resolves once those nodes hold
   * them (or after a while), so that the entry naming them is applied without a download.
   * `background`: nobody waits for them (a checkpoint), publish gently. `clientWaits`: a client
   * waits for what follows (a coalesce asked over HTTP), so the wait for those nodes is short.
   */
  putFiles(name: string, files: { name: string; path: string }[], options?: PutFilesOptions): Promise<void>;
  /** Writes the files published under `name` into `dir`. */
  getFiles(name: string, dir: string): Promise<string[]>;
  deleteFiles(name: string): Promise<void>;
  /** The names an index's files are published under (its majors, its snapshots'), each with when. */
  listPublished(indexKey: string): Promise<{ name: string; at: number }[]>;
  /**
   * Removes the parts of an index's file sets that never got their manifest (their publisher died
   * midway) and were written before `at` (ms); returns how many sets went.
   */
  deleteUnfinished(indexKey: string, at: number): Promise<number>;
  /**
   * Removes the entries of one index too large for a message that were stored before `at` (ms);
   * with `exceptFrom`, not those that its entries from that position on still name.
   */
  deleteLargeEntries(indexKey: string, at: number, options?: { exceptFrom?: number }): Promise<number>;
  /** Whether files are published under `name` (all of them: the manifest is written last). */
  hasFiles(name: string): Promise<boolean>;
  /** Small JSON documents beside the files (snapshot manifests, node positions), replicated too. */
  putDoc(name: string, value: unknown): Promise<void>;
  /**
   * `nearby`: when the log's home does not answer, the copy the node's own region holds may
   * answer instead (D-326); it may be older than the home's.
   */
  getDoc<T>(name: string, options?: { nearby?: boolean }): Promise<T | null>;
  /** The names of the documents under `prefix`. */
  listDocs(prefix: string): Promise<string[]>;
  deleteDoc(name: string): Promise<void>;
  /** Removes the entries of one index before position `beforeSeq` (a snapshot holds them). */
  truncate(indexKey: string, beforeSeq: number): Promise<void>;
  /** Sends a notice to every other node now (ports/node-notices.ts); nothing keeps it. */
  sendNotice?(notice: NodeNotice): void;
  /** Calls `listener` with each notice a node sends. */
  onNotice?(listener: (notice: NodeNotice) => void): void;
  /** Calls `listener` as this node stops and starts hearing notices (NodeNotices.watchHearing). */
  watchHearing?(listener: (hearing: boolean) => void): void;
  /** True while the log answers. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** Another entry for the index was appended since the writer last looked: catch up and retry. */
export class StaleAppendError extends Error {
  override name = "StaleAppendError";
}

/**
 * The log turned the entry away before storing it (no server held the stream's lead at that
 * moment: NATS answers that no one took the message): sending it again cannot store it twice.
 */
export class NotAppendedError extends Error {
  override name = "NotAppendedError";
}
