// Erasure (docs/versions.md): a record purged from every retained version. The engine erases it
// from its storage; the store's counts follow; a new active version of kind `purge` is the audit
// in the version list and leaves a tombstone, so uploads not yet ingested skip the id.
import { and, eq, gt } from "drizzle-orm";
import { NotFoundError } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import { versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { writeChange } from "./changes.ts";
import type { VersionContext } from "./context.ts";
import { updateVersion, rethrowUnlessDeleted } from "./rows.ts";

/** Erases `recordId` from every version the engine holds and records the counts that changed. */
async function erase(ctx: VersionContext, indexId: string, recordId: string): Promise<boolean> {
  const { found, changed } = await ctx.engine.purge(indexId, recordId);
  for (const { version, records } of changed) await updateVersion(ctx.db, indexId, version, { records });
  return found;
}

/** Purges a record from every retained version; returns the audit version, now active. */
export function purgeRecord(ctx: VersionContext, ref: IndexRef, recordId: string, by: string): Promise<VersionId> {
  return (
    ctx.locks
      .run(ref.id, async () => {
        if (!(await erase(ctx, ref.id, recordId))) {
          throw new NotFoundError(`record "${recordId}" does not exist in any retained version of index "${ref.name}"`);
        }
        const version = await writeChange(ctx, ref, { purge: { recordId, by } });
        ctx.log.info("purged a record", { index: ref.id, version, by });
        return version;
      })
      // An index deleted while its segments were rebuilt is a 404, not a failure of the server.
      .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error))
  );
}

/**
 * For a bulk major that has just been committed: an ingest that started before a purge may have
 * written the purged record into it (it read its file before the tombstone existed), so every
 * id purged since the ingest started is erased again. Runs under the index's write lock.
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
