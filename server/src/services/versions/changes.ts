// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { NotFoundError, QuotaExceededError } from "../../domain/errors.ts";
import { formatVersion, majorOf, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import type { Db } from "../../store/open.ts";
import type { IndexRef } from "../catalog.ts";
import { coalesce } from "./coalesce.ts";
import { type ChangeRow, lastMinor, parentFacts, recordChanges, tombstonesToCarry } from "./change-rows.ts";
import { groupWrite } from "./group-commit.ts";
import type { VersionContext } from "./context.ts";
import { retainAfterNewMajor } from "./retention.ts";
import { liveVersion, rethrowUnlessDeleted } from "./rows.ts";

/**
 * Applies one record change on top of the active version and makes the result active.
 * Resolves once the engine has made the change durable and the store points at it.
 */
export async function applyRecordChange(
  ctx: VersionContext,
  ref: IndexRef,
  change: { upserts?: SearchRecord[]; deletes?: string[] },
): Promise<VersionId> {
  let stored: Promise<void> | undefined;
  // With replication, the writes queued on the index go into the log together (group-commit.ts).
  const written =
    ctx.replica && ctx.engine.applyChanges
      ? groupWrite(ctx, ref, change).then((w) => {
          stored = w.stored;
          return w.version;
        })
      : ctx.locks.run(ref.id, () => writeChange(ctx, ref, change, (p) => (stored = p)));
  const version = await written
    // An index deleted while the write waited or ran is a 404, not a failure of the server.
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
  // Acknowledged once the store has its row and tombstones, written after the lock is free.
  await stored?.catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
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
  /** With replication: the store write is handed over instead of awaited under the lock. */
  storeAfter?: (stored: Promise<void>) => void,
): Promise<VersionId> {
  const parent = await liveVersion(ctx, ref.id);
  const major = majorOf(parent);
  const upserts = change.upserts ?? [];
  // Side by side: each is a store round trip on the index's serial write path, and neither
  // needs the other.
  // With replication, a parent that no version was created after has no newer tombstones (they
  // belong to versions), and its count is the engine's: no store round trip under the lock.
  const linear = ctx.replica !== undefined && ctx.replica.newest(ref.id) === parent;
  const [minor, facts] = await Promise.all([
    lastMinor(ctx, ref.id, major),
    linear ? { records: undefined, newer: [] } : parentFacts(ctx.db, ref.id, parent),
  ]);
  // Checked under the lock: two concurrent deletes of one record must not both succeed.
  for (const id of change.deletes ?? []) {
    if (!(await ctx.engine.get(ref.id, parent, id))) {
      throw new NotFoundError(`record "${id}" does not exist in the active version of index "${ref.name}"`);
    }
  }
  const version = formatVersion(major, minor + 1);
  await checkRecordQuota(ctx, ref, parent, facts.records, upserts);
  const deletes = [...(change.deletes ?? []), ...(await tombstonesToCarry(ctx, ref.id, parent, facts.newer, upserts))];

  await ctx.engine.applyChange(ref.id, {
    version,
    parent,
    upserts,
    deletes,
    activate: true,
    ...(change.purge ? { purge: change.purge } : {}),
  });
  const row = {
    indexId: ref.id,
    version,
    parent,
    kind: change.purge ? ("purge" as const) : ("change" as const),
    createdAt: ctx.now(),
    purgedRecordId: change.purge?.recordId ?? null,
    purgedBy: change.purge?.by ?? null,
    rewritten: upserts.map((r) => r.id),
    deleted: [...(change.deletes ?? []), ...(change.purge ? [change.purge.recordId] : [])],
  };
  if (ctx.replica) {
    // The change is in the log and applied: nothing to undo. Every node records its version row
    // and the active version in the background (replication/store-backfill.ts); the writer
    // records the row now as well, so that a listing right after the acknowledgement has it,
    // together with the tombstones, which are this node's to write.
    const stored = ctx.storeOrder.run(ref.id, async () => {
      const records = await ctx.engine.count(ref.id, version);
      await recordChange(ctx.db, { ...row, records, activate: false, ifAbsent: true });
    });
    if (storeAfter) storeAfter(stored);
    else await stored;
    return version;
  }
  await undoOnFailure(ctx, ref.id, version, async () => {
    // Counted once now, while the version is fresh in the engine: a listing of thousands of
    // versions then reads the counts instead of rebuilding every version to count it.
    const records = await ctx.engine.count(ref.id, version);
    await recordChange(ctx.db, { ...row, records, activate: true, ifAbsent: false });
  });
  ctx.catalog.setActive(ref.id, version);
  return version;
}

/** Records one change in the store (see recordChanges). */
function recordChange(db: Db, c: ChangeRow & { activate: boolean; ifAbsent: boolean }): Promise<void> {
  return recordChanges(db, [c], c);
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
  parentRecords: number | undefined,
  upserts: SearchRecord[],
): Promise<void> {
  const quota = ctx.policy.recordsPerIndex;
  if (quota === undefined || !upserts.length) return;
  const held = parentRecords ?? (await ctx.engine.count(ref.id, parent));
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
