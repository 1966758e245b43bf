// The search-engine port. Services talk only to this interface; the composition root picks
// the adapter (embedded engine by default, Typesense when TYPESENSE_URL is set).
//
// Versions: a *major* version ("7") is a self-contained snapshot written by a bulk ingest or a
// checkpoint (coalesce). A *minor* version ("7.3") is one record-level change applied on top of
// its parent ("7" or "7.n"). Minor versions form a tree inside their major: activating an older
// version and writing again branches from it. The engine keeps each major's records once and
// each change once, so versions share storage instead of copying the index.

import type { components } from "@sift/contract";

/** A record as stored and returned: the contract's IndexRecord. Field rules: docs/api.md, Record fields. */
export type SearchRecord = components["schemas"]["IndexRecord"];

import type { VersionId } from "../domain/version-id.ts";

/** "7" (major) or "7.3" (minor); parsed and formatted by domain/version-id.ts. */
export type { VersionId };

export type FilterComparison = "=" | "!=" | "<" | "<=" | ">" | ">=";

/** A literal in a filter: strings compare with `=` and `!=` only (docs/api.md, Filters). */
export type FilterValue = number | boolean | string;

/**
 * Filter over fields of `data`, parsed from e.g. `data.price<20 && data.brand="Acme"` by
 * search/filter.ts, whose matchesFilter is the meaning every adapter must reproduce. A field that
 * is an array matches a comparison or `in` when any of its elements does.
 */
export type FilterExpr =
  | { kind: "and" | "or"; args: FilterExpr[] }
  | { kind: "not"; arg: FilterExpr }
  | { kind: "cmp"; path: string[]; op: FilterComparison; value: FilterValue }
  /** The field equals one of the values (an array field: contains one of them). */
  | { kind: "in"; path: string[]; values: FilterValue[] }
  /** The field is present and not null. */
  | { kind: "exists"; path: string[] };

/** Facet counts asked for one field of `data`. */
export interface FacetRequest {
  path: string[];
  /** How many of the most frequent values to return, 1..100. */
  maxValues: number;
}

/** Sort by one field of `data` after the lexical tiers, in place of weight; records without it last. */
export interface SortRequest {
  path: string[];
  direction: "asc" | "desc";
}

export interface SearchRequest {
  /** Raw user input; the engine normalises and tokenises it (docs/ranking.md, Tokens). */
  query: string;
  /** `title`: prefix autocomplete on title. `all`: whole-token match on title and text fields of data. */
  scope: "title" | "all";
  weighted: boolean;
  geo?: { latitude: number; longitude: number };
  filter?: FilterExpr;
  /** 1..100 */
  limit: number;
  /** Hits of the ranked list to skip before the first returned, 0..1000; absent means 0. */
  offset?: number;
  /** Facet counts over every record the query and filter match (not only the page). */
  facets?: FacetRequest[];
  sort?: SortRequest;
  /**
   * Whether query tokens may match with typos (docs/ranking.md, Typos); absent means yes. Exact
   * matches always rank above matches with typos.
   */
  typoTolerance?: boolean;
}

export interface SearchHit {
  record: SearchRecord;
  /** Great-circle distance to the query point, when geo was given and the record has coordinates. */
  distanceMeters?: number;
}

export interface FacetValueCount {
  value: string | number | boolean;
  count: number;
}

export interface FacetResult {
  path: string[];
  /** The most frequent values (an array field counts each distinct element once per record), count descending, then value. */
  values: FacetValueCount[];
  /** Smallest and largest numeric value among the matched records, when any is numeric. */
  stats?: { min: number; max: number };
}

/** One page of a search, with what is known of the whole set of matches. */
export interface SearchPage {
  hits: SearchHit[];
  /** Records the query and filter match (at least this many when totalHitsExact is false). */
  totalHits: number;
  totalHitsExact: boolean;
  /** One entry per requested facet, in request order; absent when none were requested. */
  facets?: FacetResult[];
}

/** One record-level change creating a minor version. */
export interface RecordChange {
  version: VersionId;
  parent: VersionId;
  upserts: SearchRecord[];
  deletes: string[];
  /**
   * The change goes live at once (a record write does; the follow-up change of an upload made
   * with activate=false does not). Replication carries it so every node switches in one step.
   */
  activate?: boolean;
  /** A purge's audit version: the id erased and who asked (docs/versions.md, Erasure). */
  purge?: { recordId: string; by: string };
}

/** What a chain of changes did, as one change: records as they are at its end, ids deleted. */
export interface NetChange {
  upserts: SearchRecord[];
  deletes: string[];
}

export interface AdoptedCheckpoint {
  from: VersionId;
  major: number;
  records: number;
  /** The writes made while it was built, as its first minor (`<major>.1`). */
  carry: RecordChange | null;
  /** The version live when the carry was computed; nothing happens if another is live by then. */
  expectActive: VersionId;
  /** False: another version went live while it was built; it is kept as a rollback point only. */
  live: boolean;
  /** A client waits (a coalesce asked over HTTP): with replication, a bounded wait, then 503 (D-344). */
  clientWaits?: boolean;
}

export interface BulkWriter {
  /** Adds a batch; ids are unique within the batch stream (a later duplicate replaces the earlier one). */
  add(records: SearchRecord[]): Promise<void>;
  /** Makes the major version durable and queryable. */
  commit(): Promise<{ records: number }>;
  /** Discards everything written; the version never becomes visible. */
  abort(): Promise<void>;
}

export interface EngineVersionInfo {
  version: VersionId;
  parent: VersionId | null;
  records: number;
}

/** What a purge found and changed (SearchEngine.purge). */
export interface PurgeResult {
  /** Whether any version the engine holds had the record. */
  found: boolean;
  /** The versions that held it, with their record counts now. */
  changed: { version: VersionId; records: number }[];
}

/** How a record differs between two versions (SearchEngine.diff). */
export type RecordDiff = "added" | "updated" | "deleted" | "unchanged";

/** Records of a version by how they differ from the base, over the whole version. */
export interface DiffCounts {
  added: number;
  updated: number;
  deleted: number;
  unchanged: number;
}

/** One page of what a version changed relative to a base (SearchEngine.diff). */
export interface VersionDiffPage {
  counts: DiffCounts;
  /** Changed ids after `after` in code point order, at most `limit` of them. */
  changes: { id: string; change: RecordDiff }[];
  /** The last id of the page, when more changed ids follow. */
  next?: string;
}

/**
 * importMajor was given a major published without the earlier segment it is layered on, and this
 * node holds no copy of that segment: the major is to be built here instead.
 */
export class MissingBaseError extends Error {
  override name = "MissingBaseError";
}

/** Files held for a while (SearchEngine.holdSegmentFiles); `release` lets them go. */
export interface HeldFiles {
  files: { name: string; path: string }[];
  /** The major's own published set lacks some of these (segmentFiles `withoutBase`). */
  publishedWithoutBase?: boolean;
  release(): Promise<void>;
}

export interface SearchEngine {
  readonly name: string;
  /** Opens or creates storage; reloads persisted indexes. */
  open(): Promise<void>;
  close(): Promise<void>;
  /** True when the engine can serve queries (used by /readyz). */
  ping(): Promise<boolean>;

  /** `indexKey` is an opaque stable key chosen by the service (the index's id), never the tenant-visible name. */
  createIndex(indexKey: string): Promise<void>;
  dropIndex(indexKey: string): Promise<void>;

  /** Starts writing major version `major` from scratch (bulk ingest). */
  bulkWriter(indexKey: string, major: number): Promise<BulkWriter>;
  /**
   * Applies a change durably: when the promise resolves the change survives kill -9, and power
   * loss too unless the engine was told that another log holds it (then: after `sync()`).
   */
  applyChange(indexKey: string, change: RecordChange): Promise<void>;
  /**
   * Changes each built on the one before, committed together (with replication: one log entry;
   * the embedded engine: one fsync); an engine without it is given them one at a time.
   */
  applyChanges?(indexKey: string, changes: RecordChange[]): Promise<void>;
  /** Writes the full content of version `from` as the self-contained major version `major`. */
  checkpoint(indexKey: string, from: VersionId, major: number): Promise<{ records: number }>;
  /**
   * A checkpoint in two steps, so that writes go on while it is built (docs/versions.md,
   * Coalesce): `buildCheckpoint` writes `from` as major `major` without making it live anywhere
   * (with replication: built here once and published, not yet in the log); `adoptCheckpoint`
   * then makes it live, with `carry` on top as its first minor when writes were made meanwhile
   * (`changesSince` computes it), as one step and only while `expectActive` is live. An engine
   * without them checkpoints in one step under the index's write lock. `clientWaits`: asked over
   * HTTP, so what it waits for besides the build is short (the publishing's wait for other nodes).
   */
  buildCheckpoint?(
    indexKey: string,
    from: VersionId,
    major: number,
    options?: { clientWaits?: boolean },
  ): Promise<{ records: number }>;
  /** The net change from `from` to its descendant `to`; null when `to` does not descend from it. */
  changesSince?(indexKey: string, from: VersionId, to: VersionId): Promise<NetChange | null>;
  adoptCheckpoint?(indexKey: string, checkpoint: AdoptedCheckpoint): Promise<void>;
  /**
   * Tells the engine which version is live, so it may keep that view hot (Typesense: the alias).
   * `ifActive`: only while that is still the live version (with replication another node may
   * have moved it; a single node holds the index's write lock, so it always is). `clientWaits`:
   * a client waits for the answer (an activation asked over HTTP): with replication, a node that
   * cannot apply it soon answers 503 instead of holding the client (D-320).
   */
  activate(
    indexKey: string,
    version: VersionId,
    options?: { ifActive?: VersionId; clientWaits?: boolean },
  ): Promise<void>;
  /** Drops a version's storage; the service never drops the active version or an ancestor of a kept one. */
  dropVersion(indexKey: string, version: VersionId): Promise<void>;
  /** Drops several versions in one step where the engine can (with replication: one log entry). */
  dropVersions?(indexKey: string, versions: VersionId[]): Promise<void>;
  /**
   * Erases a record from every version the engine holds (docs/versions.md, Erasure): afterwards
   * no version returns it and its stored data is gone from the engine's storage, not merely
   * hidden. Idempotent. Versions being written (a bulk build in progress) are not reached: the
   * service purges a new major again when it commits.
   */
  purge(indexKey: string, id: string): Promise<PurgeResult>;
  /** Versions the engine holds, for reconciliation at start-up. */
  versions(indexKey: string): Promise<EngineVersionInfo[]>;

  /**
   * Replication: makes everything applied so far survive power loss, where the engine defers its
   * flushes to the change log's durability (the embedded engine, D-292). Called before a node
   * records a log position as applied.
   */
  sync?(): Promise<void>;
  /** Replication: whether the engine holds `version` (cheap; asked for every entry applied). */
  has?(indexKey: string, version: VersionId): Promise<boolean>;
  /**
   * Replication (docs/replication.md), engines whose majors are files: the files of a committed
   * major, for the node that built it to publish. `withoutBase`: those of a major layered on an
   * earlier segment without that segment's, which the nodes importing it link from their own
   * copy (importMajor; MissingBaseError when they hold none).
   */
  segmentFiles?(
    indexKey: string,
    major: number,
    options?: { withoutBase?: boolean },
  ): Promise<{ name: string; path: string }[]>;
  /**
   * Replication snapshots: the files of a committed major as they are now, kept until `release`
   * whatever lands meanwhile (a drop, a purge, a checkpoint replacing the major), so that they can
   * be published after the index's later entries are applied. Cheap: no bytes are copied.
   */
  holdSegmentFiles?(indexKey: string, major: number): Promise<HeldFiles>;
  /**
   * Replication: opens a major another node built; `fill` writes its published files into the
   * directory it is given. Durable when it resolves, like a commit.
   */
  importMajor?(
    indexKey: string,
    major: { major: number; parent: VersionId | null; records: number },
    fill: (dir: string) => Promise<void>,
  ): Promise<void>;
  /**
   * Replication snapshots: the record changes of the minor versions the engine holds, parents
   * first, as applyChange was given them (without `activate`).
   */
  changes?(indexKey: string): Promise<RecordChange[]>;

  /**
   * What `version` changed relative to `base` (null: an empty index), by content: ids only in
   * `version` were added, ids only in `base` deleted, ids in both with different content updated.
   * When `version` is a record change and `base` its parent, the ids the change wrote with the
   * content they had are listed too, as `unchanged`. Optional: an engine without it cannot tell
   * what a version changed (the service answers 501, docs/DECISIONS.md D-237).
   */
  diff?(
    indexKey: string,
    base: VersionId | null,
    version: VersionId,
    page: { after?: string | undefined; limit: number },
  ): Promise<VersionDiffPage>;

  search(indexKey: string, version: VersionId, request: SearchRequest): Promise<SearchPage>;
  get(indexKey: string, version: VersionId, id: string): Promise<SearchRecord | null>;
  count(indexKey: string, version: VersionId): Promise<number>;
}
