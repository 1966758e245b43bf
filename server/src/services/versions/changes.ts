// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { and, eq, gt, inArray, max } from "drizzle-orm";
import { NotFoundError, QuotaExceededError } from "../../domain/errors.ts";
import { formatVersion, majorOf, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import { indexes, tombstones, versions } from "../../store/schema.ts";
import type { Db } from "../../store/open.ts";
import type { IndexRef } from "../catalog.ts";
import { coalesce } from "./coalesce.ts";
import type { VersionContext } from "./context.ts";
import { retainAfterNewMajor } from "./retention.ts";
import { liveVersion, rethrowUnlessDeleted, versionRow } from "./rows.ts";

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
    .run(ref.id, () => writeChange(ctx, ref, change))
    // An index deleted while the write waited or ran is a 404, not a failure of the server.
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
  // One automatic checkpoint queued per index at a time, however many writes cross the
  // threshold while it waits for the lock (each used to queue a full rebuild of its own).
  if (minorOf(version) >= ctx.policy.coalesceAfter && !ctx.autoCoalescing.has(ref.id)) {
    ctx.autoCoalescing.add(ref.id);
    void coalesce(ctx, ref, { minChain: ctx.policy.coalesceAfter })
      .then(() => retainAfterNewMajor(ctx, ref.id))
      .catch((error: Error) => ctx.log.error("automatic coalesce failed", { index: ref.id, error: error.message }))
      .finally(() => ctx.autoCoalescing.delete(ref.id));
  }
  return version;
}

/**
 * The body of a record change, for a caller that holds the index's write lock. A `purge` (the
 * audit version of an erasure, versions/purge.ts) is recorded with its kind and audit fields and
 * leaves a tombstone for the purged id, like a delete.
 */
export async function writeChange(
  ctx: VersionContext,
  ref: IndexRef,
  change: { upserts?: SearchRecord[]; deletes?: string[]; purge?: { recordId: string; by: string } },
): Promise<VersionId> {
  const parent = await liveVersion(ctx, ref.id);
  // Checked under the lock: two concurrent deletes of one record must not both succeed.
  for (const id of change.deletes ?? []) {
    if (!(await ctx.engine.get(ref.id, parent, id))) {
      throw new NotFoundError(`record "${id}" does not exist in the active version of index "${ref.name}"`);
    }
  }
  const major = majorOf(parent);
  const version = formatVersion(major, (await lastMinor(ctx, ref.id, major)) + 1);
  const upserts = change.upserts ?? [];
  await checkRecordQuota(ctx, ref, parent, upserts);
  const deletes = [...(change.deletes ?? []), ...(await tombstonesToCarry(ctx, ref.id, parent, upserts))];

  await ctx.engine.applyChange(ref.id, {
    version,
    parent,
    upserts,
    deletes,
    activate: true,
    ...(change.purge ? { purge: change.purge } : {}),
  });
  const deleted = [...(change.deletes ?? []), ...(change.purge ? [change.purge.recordId] : [])];
  const rewritten = upserts.map((r) => r.id);
  if (ctx.replica) {
    // The change is in the log and applied: nothing to undo. Its version row and the active
    // version are recorded by the replica, on every node (replication/replica.ts); the
    // tombstones are this node's to write.
    await ctx.db.transaction((tx) => writeTombstones(tx, ref.id, version, ctx.now(), rewritten, deleted));
    return version;
  }
  await undoOnFailure(ctx, ref.id, version, async () => {
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
        kind: change.purge ? "purge" : "change",
        state: "ready",
        records,
        createdAt: now,
        purgedRecordId: change.purge?.recordId ?? null,
        purgedBy: change.purge?.by ?? null,
      });
      await tx.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, ref.id));
      await writeTombstones(tx, ref.id, version, now, rewritten, deleted);
    });
  });
  ctx.catalog.setActive(ref.id, version);
  return version;
}

/** Rewritten ids lose their tombstone; deleted (and purged) ids get one (docs/versions.md). */
async function writeTombstones(
  tx: Pick<Db, "insert" | "delete">,
  indexId: string,
  version: VersionId,
  now: number,
  rewritten: string[],
  deleted: string[],
): Promise<void> {
  if (rewritten.length) {
    await tx.delete(tombstones).where(and(eq(tombstones.indexId, indexId), inArray(tombstones.recordId, rewritten)));
  }
  for (const recordId of deleted) {
    await tx
      .insert(tombstones)
      .values({ indexId, recordId, version, createdAt: now })
      .onConflictDoUpdate({ target: [tombstones.indexId, tombstones.recordId], set: { version, createdAt: now } });
  }
}

/** The highest minor of a major: from the store, or with replication from what this node applied. */
async function lastMinor(ctx: VersionContext, indexId: string, major: number): Promise<number> {
  if (ctx.replica) return ctx.replica.maxMinor(indexId, major);
  const [last] = await ctx.db
    .select({ minor: max(versions.minor) })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), eq(versions.major, major)));
  return last?.minor ?? 0;
}

/**
 * Runs the steps after the engine wrote `version`; when one fails, the engine's version is
 * withdrawn before the error goes on, so engine and store both stay at the previous version and
 * the id is free for the next write. Before, the engine stayed one version ahead and every later
 * write to the index failed until a restart (issue 15, finding 1).
 */
export async function undoOnFailure(
  ctx: VersionContext,
  indexId: string,
  version: VersionId,
  steps: () => Promise<void>,
): Promise<void> {
  try {
    await steps();
  } catch (error) {
    await ctx.engine.dropVersion(indexId, version).catch((dropError: Error) =>
      // Start-up reconciliation records what stays behind, so the id is never reused.
      ctx.log.error("could not withdraw a version the store did not record", {
        index: indexId,
        version,
        error: dropError.message,
      }),
    );
    throw error;
  }
}

/**
 * Refuses upserts that would take the index past its quota of records. Only ids new to the parent
 * count, so replacing a record is always allowed; they are looked up only near the quota.
 */
async function checkRecordQuota(
  ctx: VersionContext,
  ref: IndexRef,
  parent: VersionId,
  upserts: SearchRecord[],
): Promise<void> {
  const quota = ctx.policy.recordsPerIndex;
  if (quota === undefined || !upserts.length) return;
  const held = (await versionRow(ctx.db, ref.id, parent))?.records ?? (await ctx.engine.count(ref.id, parent));
  if (held + upserts.length <= quota) return;
  let added = 0;
  for (const r of upserts) if (!(await ctx.engine.get(ref.id, parent, r.id))) added++;
  if (held + added > quota) {
    throw new QuotaExceededError(
      "recordsPerIndex",
      quota,
      `index "${ref.name}" holds ${held} records, its quota: delete records to add others, or replace existing ones`,
    );
  }
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
