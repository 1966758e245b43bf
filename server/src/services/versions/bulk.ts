// The version side of a bulk upload: the ingest runner (or the demo seed) writes the records
// through the engine's bulk writer; this makes the resulting major ready, or failed.
import { and, eq, gt } from "drizzle-orm";
import { formatVersion, type VersionId } from "../../domain/version-id.ts";
import { tombstones, versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { undoOnFailure } from "./undo.ts";
import { setActive, storeSettled, type VersionContext } from "./context.ts";
import { erasePurgedSince } from "./erase.ts";
import { activeVersionOf, updateVersion } from "./rows.ts";

/**
 * Makes a committed bulk version ready and (unless told not to) active. Ids purged while the
 * ingest ran are erased from it (versions/purge.ts). Ids deleted while the
 * ingest ran were not suppressed by it, so they are deleted in a follow-up change `<major>.1`,
 * which then becomes the version that goes live.
 */
export function finishBulk(
  ctx: VersionContext,
  ref: IndexRef,
  major: number,
  options: { records: number; activate: boolean; startedAt: number },
): Promise<VersionId> {
  return ctx.locks.run(ref.id, async () => {
    const base = formatVersion(major);
    // What the upload replaces, kept so what it changed can be told later (versions/diff.ts).
    const before = ctx.replica ? (ctx.replica.active(ref.id) ?? null) : await activeVersionOf(ctx.db, ref.id);
    await updateVersion(ctx.db, ref.id, base, { state: "ready", records: options.records, base: before });
    // The tombstones of deletes this node answered or applied are in the store before they are
    // read (D-295). Not in erasePurgedSince: a purge's row is in before its answer, and that also
    // runs at every checkpoint's adoption, under the lock.
    await storeSettled(ctx, ref.id);
    await erasePurgedSince(ctx, ref.id, options.startedAt);
    const late = await ctx.db
      .select({ recordId: tombstones.recordId })
      .from(tombstones)
      .where(and(eq(tombstones.indexId, ref.id), gt(tombstones.createdAt, options.startedAt)));
    const deletes: string[] = [];
    for (const { recordId } of late) if (await ctx.engine.get(ref.id, base, recordId)) deletes.push(recordId);
    let live = base;
    if (deletes.length) {
      live = formatVersion(major, 1);
      await ctx.engine.applyChange(ref.id, {
        version: live,
        parent: base,
        upserts: [],
        deletes,
        // Not live by itself: it builds on the new major, which is not active yet; setActive
        // below makes it live when asked to.
        activate: false,
      });
      // With replication the replica records the row, on every node (replication/replica.ts).
      if (!ctx.replica) {
        await undoOnFailure(ctx, ref.id, live, async () => {
          await ctx.db.insert(versions).values({
            indexId: ref.id,
            version: live,
            major,
            minor: 1,
            parent: base,
            kind: "change",
            state: "ready",
            records: await ctx.engine.count(ref.id, live),
            createdAt: ctx.now(),
          });
        });
      }
    }
    if (options.activate) await setActive(ctx, ref.id, live);
    return live;
  });
}

export async function failBulk(ctx: VersionContext, indexId: string, major: number): Promise<void> {
  await updateVersion(ctx.db, indexId, formatVersion(major), { state: "failed" });
}
