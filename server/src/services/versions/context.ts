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
}

/** Makes `version` the one reads use: in the store, in the engine, and in the catalog's cache. */
export async function setActive(ctx: VersionContext, indexId: string, version: VersionId): Promise<void> {
  await ctx.db.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, indexId));
  await ctx.engine.activate(indexId, version);
  ctx.catalog.setActive(indexId, version);
}
