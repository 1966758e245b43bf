// Erasure from the engine's storage (docs/versions.md, Erasure), for a purge and for versions
// that were being built while one happened (a bulk major, a checkpoint).
import { and, eq, gt } from "drizzle-orm";
import { versions } from "../../store/schema.ts";
import type { VersionContext } from "./context.ts";
import { updateVersion } from "./rows.ts";

/** Erases `recordId` from every version the engine holds and records the counts that changed. */
export async function erase(ctx: VersionContext, indexId: string, recordId: string): Promise<boolean> {
  const { found, changed } = await ctx.engine.purge(indexId, recordId);
  for (const { version, records } of changed) await updateVersion(ctx.db, indexId, version, { records });
  return found;
}

/**
 * For a major that has just been committed (a bulk upload, a checkpoint built outside the lock): a
 * build that started before a purge may have written the purged record into it, so every id
 * purged since it started is erased again. Runs under the index's write lock.
 */
export async function erasePurgedSince(ctx: VersionContext, indexId: string, startedAt: number): Promise<void> {
  const purged = await ctx.db
    .select({ recordId: versions.purgedRecordId })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), eq(versions.kind, "purge"), gt(versions.createdAt, startedAt)));
  for (const recordId of new Set(purged.map((p) => p.recordId))) {
    if (recordId !== null) await erase(ctx, indexId, recordId);
  }
}
