// The version side of a bulk upload: the ingest runner (or the demo seed) writes the records
// through the engine's bulk writer; this makes the resulting major ready, or failed.
import { and, eq, gt } from "drizzle-orm";
import { formatVersion, majorOf, type VersionId } from "../../domain/version-id.ts";
import { tombstones } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { undoOnFailure } from "./undo.ts";
import { setActive, storeSettled, type VersionContext } from "./context.ts";
import { erasePurgedSince } from "./erase.ts";
import { activeVersionOf, insertVersion, updateVersion, versionRow } from "./rows.ts";

/**
 * `activate` as an upload asked for it; "unless-superseded" when its ingest is finished late, by
 * another node or a restart (D-324): not over a later upload that went live meanwhile.
 */
export type BulkActivation = boolean | "unless-superseded";

/**
 * Makes a committed bulk version ready and (unless told not to) active. Ids purged while the
 * ingest ran are erased from it (versions/purge.ts). Ids deleted while the
 * ingest ran were not suppressed by it, so they are deleted in a follow-up change `<major>.1`,
 * which then becomes the version that goes live. Idempotent, so that an ingest cut off after its
 * version was recorded is finished by running it again (`records` then counted from the engine).
 */
export function finishBulk(
  ctx: VersionContext,
  ref: IndexRef,
  major: number,
  options: { records?: number; activate: BulkActivation; startedAt: number },
): Promise<VersionId> {
  return ctx.locks.run(ref.id, async () => {
    const base = formatVersion(major);
    const recorded = await versionRow(ctx.db, ref.id, base);
    // What the upload replaces, kept so what it changed can be told later (versions/diff.ts); a
    // second run keeps what the first found.
    const before =
      recorded?.state === "ready"
        ? recorded.base
        : ctx.replica
          ? (ctx.replica.active(ref.id) ?? null)
          : await activeVersionOf(ctx.db, ref.id);
    const records = options.records ?? (await ctx.engine.count(ref.id, base));
    await updateVersion(ctx.db, ref.id, base, { state: "ready", records, base: before });
    // The tombstones of deletes this node answered or applied are in the store before they are
    // read (D-295). Not in erasePurgedSince: a purge's row is in before its answer, and that also
    // runs at every checkpoint's adoption, under the lock.
    await storeSettled(ctx, ref.id);
    await erasePurgedSince(ctx, ref.id, options.startedAt);
    const followUp = formatVersion(major, 1);
    // A first run that made the follow-up already: it is what goes live.
    if (await holds(ctx, ref.id, followUp)) {
      if (await activates(ctx, ref.id, major, options.activate)) await setActive(ctx, ref.id, followUp);
      return followUp;
    }
    const late = await ctx.db
      .select({ recordId: tombstones.recordId })
      .from(tombstones)
      .where(and(eq(tombstones.indexId, ref.id), gt(tombstones.createdAt, options.startedAt)));
    const deletes: string[] = [];
    for (const { recordId } of late) if (await ctx.engine.get(ref.id, base, recordId)) deletes.push(recordId);
    let live = base;
    if (deletes.length) {
      live = followUp;
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
          await insertVersion(ctx.db, {
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
    if (await activates(ctx, ref.id, major, options.activate)) await setActive(ctx, ref.id, live);
    return live;
  });
}

async function holds(ctx: VersionContext, indexId: string, version: VersionId): Promise<boolean> {
  if (ctx.replica) return ctx.replica.has(indexId, version);
  return (await versionRow(ctx.db, indexId, version)) !== undefined;
}

async function activates(ctx: VersionContext, indexId: string, major: number, activate: BulkActivation) {
  if (activate !== "unless-superseded") return activate;
  return (await liveUpload(ctx, indexId)) < major;
}

/**
 * The major of the upload the active version comes from: checkpoints are followed back to what
 * they copied (their majors are drawn later than the upload they copy). 0: none.
 */
async function liveUpload(ctx: VersionContext, indexId: string): Promise<number> {
  let version: VersionId | null = ctx.replica
    ? (ctx.replica.active(indexId) ?? null)
    : await activeVersionOf(ctx.db, indexId);
  // Bounded: a chain of checkpoints is as long as the index's retained history, never a loop.
  for (let step = 0; version !== null && step < 10_000; step++) {
    const row = await versionRow(ctx.db, indexId, formatVersion(majorOf(version)));
    if (row?.kind !== "checkpoint") return majorOf(version);
    version = row.parent;
  }
  return 0;
}

export async function failBulk(ctx: VersionContext, indexId: string, major: number): Promise<void> {
  await updateVersion(ctx.db, indexId, formatVersion(major), { state: "failed" });
}
