// Retention (docs/versions.md): keeps the active version, the newest `retainVersions` ready
// versions, everything those are built on, and anything pending. The rest is dropped from the
// engine and marked `dropped` in the store (ids are never reused).
import { and, desc, eq, inArray, ne } from "drizzle-orm";
import { NotFoundError } from "../../domain/errors.ts";
import { majorOf, type VersionId } from "../../domain/version-id.ts";
import { indexes, versions } from "../../store/schema.ts";
import { storeSettled, type VersionContext } from "./context.ts";
import { liveVersion, type VersionRow } from "./rows.ts";

type PlannedRow = Pick<VersionRow, "version" | "major" | "minor" | "parent" | "state">;

/**
 * The versions to drop, given an index's rows that are not dropped yet, newest first. A minor
 * needs its parent and so on down to its major; a checkpoint's parent is provenance, not storage.
 * A major is dropped only when none of its versions is kept, since its minors go with it.
 */
export function planRetention(rows: readonly PlannedRow[], active: VersionId, retainVersions: number): PlannedRow[] {
  const byVersion = new Map(rows.map((r) => [r.version, r]));
  const keep = new Set<string>();
  const keepWithBase = (version: string) => {
    for (let v: string | null | undefined = version; v && !keep.has(v); ) {
      keep.add(v);
      const row = byVersion.get(v);
      v = row && row.minor > 0 ? row.parent : undefined;
    }
  };
  keepWithBase(active);
  for (const r of rows) if (r.state === "pending") keep.add(r.version);
  for (const r of rows.filter((r) => r.state === "ready").slice(0, retainVersions)) keepWithBase(r.version);

  const keptMajors = new Set([...keep].map(majorOf));
  return rows.filter((r) => !keep.has(r.version) && !(r.minor === 0 && keptMajors.has(r.major)));
}

/** What retention would drop of the index now. */
async function planFor(ctx: VersionContext, indexId: string): Promise<PlannedRow[]> {
  await storeSettled(ctx, indexId);
  const rows = await ctx.db
    .select({
      version: versions.version,
      major: versions.major,
      minor: versions.minor,
      parent: versions.parent,
      state: versions.state,
    })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), ne(versions.state, "dropped")))
    .orderBy(desc(versions.createdAt));
  return planRetention(rows, await liveVersion(ctx, indexId), ctx.policy.retainVersions);
}

/** Applies retention to one index under its write lock; returns the versions it dropped. */
export async function applyRetention(ctx: VersionContext, indexId: string): Promise<VersionId[]> {
  // With replication, an index this node has not received yet is not its to retain.
  if (ctx.replica && ctx.replica.active(indexId) === undefined) return [];
  // Looked at before taking the lock: most passes drop nothing (every one right after an index's
  // first checkpoint, whose chain the newest versions still stand on), and reading the index's
  // rows under the lock held its writes 15 to 65 ms at each checkpoint (bench/RESULTS.md). What
  // writes make droppable meanwhile waits for the next pass.
  if ((await planFor(ctx, indexId)).length === 0) return [];
  return ctx.locks.run(indexId, async () => {
    const plan = await planFor(ctx, indexId);
    const ready = plan.filter((r) => r.state === "ready").map((r) => r.version);
    // With replication, one log entry for them all: after a checkpoint of 1,000 minors, one
    // entry each held the index for seconds and starved every other index on every node.
    if (ctx.engine.dropVersions) await ctx.engine.dropVersions(indexId, ready);
    else for (const version of ready) await ctx.engine.dropVersion(indexId, version);
    const dropped = plan.map((r) => r.version);
    if (dropped.length) {
      await ctx.db
        .update(versions)
        .set({ state: "dropped" })
        .where(and(eq(versions.indexId, indexId), inArray(versions.version, dropped)));
    }
    if (dropped.length) ctx.log.info("retention dropped versions", { index: indexId, dropped: dropped.length });
    return dropped;
  });
}

/**
 * Runs retention over every index; a failure on one index is logged and does not stop the rest.
 * Returns the number of indexes visited.
 */
export async function applyRetentionEverywhere(ctx: VersionContext): Promise<number> {
  const all = await ctx.db.select({ id: indexes.id }).from(indexes);
  for (const { id } of all) await applyRetention(ctx, id).catch((error: Error) => retentionFailed(ctx, id, error));
  return all.length;
}

/** Logs a failed retention; an index deleted meanwhile has nothing left to retain (no error). */
function retentionFailed(ctx: VersionContext, indexId: string, error: Error): void {
  if (error instanceof NotFoundError) return;
  ctx.log.error("retention failed", { index: indexId, error: error.message });
}

/**
 * Retention for one index right after it gained a major (an upload or a checkpoint), so the
 * quota of retained versions holds as versions are made, not only at the next periodic pass. A
 * failure is logged: the version was made, and the periodic pass tries again.
 */
export async function retainAfterNewMajor(ctx: VersionContext, indexId: string): Promise<void> {
  await applyRetention(ctx, indexId).catch((error: Error) => retentionFailed(ctx, indexId, error));
}
