// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import type { IndexRef } from "../catalog.ts";
import { Admission, type RecordWrite } from "./admission.ts";
import { undoOnFailure } from "./undo.ts";
import { coalesce } from "./coalesce.ts";
import { recordChanges } from "./change-rows.ts";
import { groupWrite } from "./group-commit.ts";
import { storeSettled, type VersionContext } from "./context.ts";
import { retainAfterNewMajor } from "./retention.ts";
import { rethrowUnlessDeleted } from "./rows.ts";
import type { WriteDeadline } from "./write-deadline.ts";

/**
 * The change of a chain that starts its automatic checkpoint: SIFT_COALESCE_AFTER, less up to
 * half of it chosen by the index's id (D-282, D-305). Indexes written alike reached the number
 * together and checkpointed at once, and every region adopted them all in the same moment.
 */
export function firstCheckpointAt(indexId: string, every: number): number {
  const spread = Math.floor(every / 2);
  if (spread === 0) return every;
  // FNV-1a: the same number on every node, from the id alone.
  let hash = 0x811c9dc5;
  for (let i = 0; i < indexId.length; i++) hash = Math.imul(hash ^ indexId.charCodeAt(i), 0x01000193) >>> 0;
  return every - (hash % spread);
}

/**
 * Applies one record change on top of the active version and makes the result active.
 * Resolves once the engine has made the change durable and, in one process, the store points at
 * it. With replication the write is answered once the log has it and this node applied it; its
 * node records its rows with its next store batch (D-295, D-299), and readers of version rows and
 * tombstones wait for what this node has not recorded yet (storeSettled).
 */
export async function applyRecordChange(
  ctx: VersionContext,
  ref: IndexRef,
  change: { upserts?: SearchRecord[]; deletes?: string[] },
  deadline?: WriteDeadline,
): Promise<VersionId> {
  // The writes queued on the index are committed together (group-commit.ts), where the engine
  // can take a batch.
  const written = ctx.engine.applyChanges
    ? groupWrite(ctx, ref, change, deadline)
    : ctx.locks.run(ref.id, () => writeChange(ctx, ref, change, deadline), { clientWaits: true });
  const version = await written
    // An index deleted while the write waited or ran is a 404, not a failure of the server.
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
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
  deadline?: WriteDeadline,
): Promise<VersionId> {
  deadline?.check();
  const upserts = change.upserts ?? [];
  const { version, parent, deletes } = await (await Admission.open(ctx, ref)).admit(change);
  // Not made once its client was answered (the store held the admission, D-356).
  deadline?.commit();
  await ctx.engine.applyChange(ref.id, {
    version,
    parent,
    upserts,
    deletes,
    activate: true,
    ...(change.purge ? { purge: change.purge } : {}),
  });
  if (ctx.replica) {
    // In the log and applied: nothing to undo. This node took the rows as it applied the entry
    // and records them in the store now (a purge's answer is its audit row, D-299).
    await storeSettled(ctx, ref.id);
    return version;
  }
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
  await undoOnFailure(ctx, ref.id, version, async () => {
    // Counted once now, while the version is fresh in the engine: a listing of thousands of
    // versions then reads the counts instead of rebuilding every version to count it.
    const records = await ctx.engine.count(ref.id, version);
    await recordChanges(ctx.db, [{ ...row, records }], { activate: true, ifAbsent: false });
  });
  ctx.catalog.setActive(ref.id, version);
  return version;
}
