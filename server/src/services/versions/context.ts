// What every part of the version service shares: the store, the engine, the policy, the clock,
// and the per-index write lock.
import type { VersionId } from "../../domain/version-id.ts";
import type { Logger } from "../../log.ts";
import type { SearchEngine } from "../../ports/engine.ts";
import type { Db } from "../../store/open.ts";
import { indexes } from "../../store/schema.ts";
import { eq } from "drizzle-orm";
import type { CatalogService } from "../catalog.ts";
import type { IndexLocks } from "./lock.ts";
import { recordLiveAtNow } from "./change-rows.ts";

/**
 * With replication (docs/replication.md): what this node has applied of the change log. Version
 * ids are drawn from it rather than from the shared store, which another node may have written
 * ahead of what this node has applied.
 */
export interface ReplicaView {
  active(indexId: string): VersionId | undefined;
  /** Whether this node has applied the index's drop (its deletion, perhaps from another region). */
  isDropped(indexId: string): boolean;
  maxMinor(indexId: string, major: number): number;
  /** The version the newest accepted entry of the index created (nothing was created after it). */
  newest(indexId: string): VersionId | undefined;
  has(indexId: string, version: VersionId): boolean;
  waitFor(indexId: string, version: VersionId, timeoutMs: number): Promise<void>;
  /** The version live here and the log position of the newest entry of the index applied here. */
  liveAt(indexId: string): LiveAt | undefined;
  /** Resolves once the rows of what this node applied of the index are in the shared store. */
  storeSettled(indexId: string): Promise<void>;
  /** Resolves once this node has applied what the log holds now (`clientWaits`: within a bound, or 503). */
  catchUp(options: { clientWaits?: boolean }): Promise<void>;
  /** How long a client waits for this node to apply its own entry (a purge's, D-363). */
  readonly clientWaitMs: number;
}

/** An index's active version as of a log position: the store keeps the one with the highest. */
export interface LiveAt {
  version: VersionId;
  seq: number;
}

export interface VersionPolicy {
  /** A major that has accumulated this many record changes is checkpointed automatically. */
  coalesceAfter: number;
  /** Newest versions kept besides the active one and what it is built on. */
  retainVersions: number;
  /** Records a record change may take a version to (SIFT_QUOTA_RECORDS_PER_INDEX); no limit when absent. */
  recordsPerIndex?: number;
  /** Record writes one tenant may have in progress at a time (versions/write-gate.ts); no bound when absent. */
  writesPerTenant?: number;
}

export interface VersionContext {
  db: Db;
  engine: SearchEngine;
  /** Only to keep its cached index refs in step with the active version. */
  catalog: Pick<CatalogService, "setActive">;
  policy: VersionPolicy;
  log: Logger;
  now: () => number;
  locks: IndexLocks;
  /** Indexes with an automatic checkpoint queued or running (versions/changes.ts). */
  autoCoalescing: Set<string>;
  replica?: ReplicaView | undefined;
}

/**
 * Makes `version` the one reads use: in the store, in the engine, and in the catalog's cache.
 * `options` as SearchEngine.activate takes them (`clientWaits`: asked over HTTP).
 */
export async function setActive(
  ctx: VersionContext,
  indexId: string,
  version: VersionId,
  options: { ifActive?: VersionId; clientWaits?: boolean } = {},
): Promise<void> {
  // The engine first: with replication its activate is the log entry that decides, and every
  // node records the active version in the store in log order; this one does before answering.
  await ctx.engine.activate(indexId, version, options);
  const live = ctx.replica?.liveAt(indexId);
  if (!ctx.replica) await ctx.db.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, indexId));
  else if (live) await recordLiveAtNow(ctx.db, indexId, live);
  ctx.catalog.setActive(indexId, version);
}

/**
 * With replication, a write is answered before its rows reach the shared store (D-295, D-299):
 * every reader of an index's version rows or tombstones calls this first, so that it finds
 * whatever this node has answered or applied of the index (its node's store batch, written now
 * if it holds any). Nothing to wait for in one process, where the store is written before answering.
 */
export async function storeSettled(ctx: VersionContext, indexId: string): Promise<void> {
  if (ctx.replica) await ctx.replica.storeSettled(indexId);
}
