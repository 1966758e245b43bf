// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import type { Db } from "../../store/open.ts";
import type { IndexRef } from "../catalog.ts";
import { Admission, type RecordWrite } from "./admission.ts";
import { undoOnFailure } from "./undo.ts";
import { coalesce } from "./coalesce.ts";
import { type ChangeRow, recordChanges } from "./change-rows.ts";
import { groupWrite } from "./group-commit.ts";
import type { LiveAt, VersionContext } from "./context.ts";
import { retainAfterNewMajor } from "./retention.ts";
import { rethrowUnlessDeleted } from "./rows.ts";

/**
 * The change of a chain that starts its automatic checkpoint: SIFT_COALESCE_AFTER, less up to a
 * quarter of it chosen by the index's id (D-282). Indexes written alike reached the number
 * together and checkpointed at once, and every region adopted them all in the same moment.
 */
export function firstCheckpointAt(indexId: string, every: number): number {
  const spread = Math.floor(every / 4);
  if (spread === 0) return every;
  // FNV-1a: the same number on every node, from the id alone.
  let hash = 0x811c9dc5;
  for (let i = 0; i < indexId.length; i++) hash = Math.imul(hash ^ indexId.charCodeAt(i), 0x01000193) >>> 0;
  return every - (hash % spread);
}

/**
 * Applies one record change on top of the active version and makes the result active.
 * Resolves once the engine has made the change durable and, in one process, the store points at
 * it (with replication the store's rows follow the answer, D-295).
 */
export async function applyRecordChange(
  ctx: VersionContext,
  ref: IndexRef,
  change: { upserts?: SearchRecord[]; deletes?: string[] },
): Promise<VersionId> {
  let stored: Promise<void> | undefined;
  // The writes queued on the index are committed together (group-commit.ts), where the engine
  // can take a batch.
  const written = ctx.engine.applyChanges
    ? groupWrite(ctx, ref, change).then((w) => {
        stored = w.stored;
        return w.version;
      })
    : ctx.locks.run(ref.id, () => writeChange(ctx, ref, change, (p) => (stored = p)));
  const version = await written
    // An index deleted while the write waited or ran is a 404, not a failure of the server.
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
  // With replication the write is acknowledged once the log has it and this node applied it; its
  // row and tombstones follow (D-295). Readers of version rows and tombstones wait for what this
  // node has not written yet (storeSettled), and every node writes them again in its batch
  // (store-backfill.ts), trying again while the store does not take them. Waiting for them here
  // doubled the acknowledgement p99 at 100 writes/s over three regions.
  void stored?.catch(() => undefined);
  // Started by the write that made the chain's N-th change (or N + SIFT_COALESCE_AFTER-th, ... if
  // that checkpoint failed): one node of all regions builds it, not every node whose writes cross
  // the threshold while it is built (three builds of one checkpoint at once, D-254). One per
  // index at a time.
  const first = firstCheckpointAt(ref.id, ctx.policy.coalesceAfter);
  const minor = minorOf(version);
  if (minor >= first && (minor - first) % ctx.policy.coalesceAfter === 0 && !ctx.autoCoalescing.has(ref.id)) {
    ctx.autoCoalescing.add(ref.id);
    void coalesce(ctx, ref, { minChain: first })
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
  change: RecordWrite,
  /** With replication: the store write is handed over instead of awaited under the lock. */
  storeAfter?: (stored: Promise<void>) => void,
): Promise<VersionId> {
  const upserts = change.upserts ?? [];
  const { version, parent, deletes } = await (await Admission.open(ctx, ref)).admit(change);

  await ctx.engine.applyChange(ref.id, {
    version,
    parent,
    upserts,
    deletes,
    activate: true,
    ...(change.purge ? { purge: change.purge } : {}),
  });
  const liveAt = ctx.replica?.liveAt(ref.id);
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
    // records both now as well, with the tombstones, so that they are in the store within
    // milliseconds (readers on this node wait for them: storeSettled, D-295).
    const stored = ctx.storeBatches.record(
      ref.id,
      async () => [{ ...row, records: await ctx.engine.count(ref.id, version) }],
      liveAt,
    );
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
function recordChange(
  db: Db,
  c: ChangeRow & { activate: boolean; ifAbsent: boolean; liveAt?: LiveAt | undefined },
): Promise<void> {
  return recordChanges(db, [c], c);
}
