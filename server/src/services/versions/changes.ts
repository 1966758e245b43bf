// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { and, eq, gt, inArray, max } from "drizzle-orm";
import { NotFoundError } from "../../domain/errors.ts";
import { formatVersion, majorOf, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import { indexes, tombstones, versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { coalesce } from "./coalesce.ts";
import type { VersionContext } from "./context.ts";
import { activeVersionOf, rethrowUnlessDeleted, versionRow } from "./rows.ts";

/**
 * Applies one record change on top of the active version and makes the result active.
 * Resolves once the engine has made the change durable and the store points at it.
 */
export async function applyRecordChange(
  ctx: VersionContext,
  ref: IndexRef,
  change: { upserts?: SearchRecord[]; deletes?: string[] },
): Promise<VersionId> {
  const version = await ctx.locks
    .run(ref.id, async () => {
      const parent = await activeVersionOf(ctx.db, ref.id);
      // Checked under the lock: two concurrent deletes of one record must not both succeed.
      for (const id of change.deletes ?? []) {
        if (!(await ctx.engine.get(ref.id, parent, id))) {
          throw new NotFoundError(`record "${id}" does not exist in the active version of index "${ref.name}"`);
        }
      }
      const major = majorOf(parent);
      const [last] = await ctx.db
        .select({ minor: max(versions.minor) })
        .from(versions)
        .where(and(eq(versions.indexId, ref.id), eq(versions.major, major)));
      const version = formatVersion(major, (last?.minor ?? 0) + 1);
      const upserts = change.upserts ?? [];
      const deletes = [...(change.deletes ?? []), ...(await tombstonesToCarry(ctx, ref.id, parent, upserts))];

      await ctx.engine.applyChange(ref.id, { version, parent, upserts, deletes });
      // Counted once now, while the version is fresh in the engine: a listing of thousands of
      // versions then reads the counts instead of rebuilding every version to count it.
      const records = await ctx.engine.count(ref.id, version);
      const now = ctx.now();
      await ctx.db.transaction(async (tx) => {
        await tx.insert(versions).values({
          indexId: ref.id,
          version,
          major,
          minor: minorOf(version),
          parent,
          kind: "change",
          state: "ready",
          records,
          createdAt: now,
        });
        await tx.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, ref.id));
        const rewritten = upserts.map((r) => r.id);
        if (rewritten.length) {
          await tx
            .delete(tombstones)
            .where(and(eq(tombstones.indexId, ref.id), inArray(tombstones.recordId, rewritten)));
        }
        for (const recordId of change.deletes ?? []) {
          await tx
            .insert(tombstones)
            .values({ indexId: ref.id, recordId, version, createdAt: now })
            .onConflictDoUpdate({
              target: [tombstones.indexId, tombstones.recordId],
              set: { version, createdAt: now },
            });
        }
      });
      ctx.catalog.setActive(ref.id, version);
      return version;
    })
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
  // One automatic checkpoint queued per index at a time, however many writes cross the
  // threshold while it waits for the lock (each used to queue a full rebuild of its own).
  if (minorOf(version) >= ctx.policy.coalesceAfter && !ctx.autoCoalescing.has(ref.id)) {
    ctx.autoCoalescing.add(ref.id);
    void coalesce(ctx, ref, { minChain: ctx.policy.coalesceAfter })
      .catch((error: Error) => ctx.log.error("automatic coalesce failed", { index: ref.id, error: error.message }))
      .finally(() => ctx.autoCoalescing.delete(ref.id));
  }
  return version;
}

/**
 * A delete must outlive branching (docs/versions.md, tombstones): when the parent was created
 * before some delete that happened elsewhere, the ids that delete removed but the parent still
 * holds are deleted again in the new version.
 */
async function tombstonesToCarry(
  ctx: VersionContext,
  indexId: string,
  parent: VersionId,
  upserts: SearchRecord[],
): Promise<string[]> {
  const parentRow = await versionRow(ctx.db, indexId, parent);
  if (!parentRow) return [];
  const newer = await ctx.db
    .select({ recordId: tombstones.recordId })
    .from(tombstones)
    .where(and(eq(tombstones.indexId, indexId), gt(tombstones.createdAt, parentRow.createdAt)));
  const rewritten = new Set(upserts.map((r) => r.id));
  const carried: string[] = [];
  for (const { recordId } of newer) {
    if (!rewritten.has(recordId) && (await ctx.engine.get(indexId, parent, recordId))) carried.push(recordId);
  }
  return carried;
}
