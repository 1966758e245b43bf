// Group commit of record writes (docs/versions.md, docs/replication.md): the writes queued on one
// index while its lock is held are committed together, each still its own minor version on top of
// the one before. One engine commit (one fsync) and one store statement for the lot, and with
// replication one log entry delivered to every node, instead of one each. Writes to one index are
// serial (each builds on the last), so these per-write costs were what bounded an index's write
// rate (D-220; in one process, D-258).
import type { VersionId } from "../../domain/version-id.ts";
import { StaleAppendError } from "../../ports/change-log.ts";
import type { RecordChange, SearchRecord } from "../../ports/engine.ts";
import type { IndexRef } from "../catalog.ts";
import { Admission } from "./admission.ts";
import { type ChangeRow, recordChanges } from "./change-rows.ts";
import type { VersionContext } from "./context.ts";
import { undoOnFailure } from "./undo.ts";
import type { WriteDeadline } from "./write-deadline.ts";

/** Writes one entry carries at most (a bigger entry goes through the object store). */
const MAX_BATCH = 64;

interface Pending {
  change: { upserts?: SearchRecord[]; deletes?: string[] };
  /** Its client's bound on a store that hangs (D-356). */
  deadline: WriteDeadline | undefined;
  resolve: (version: VersionId) => void;
  reject: (error: unknown) => void;
}

const queues = new WeakMap<VersionContext, Map<string, Pending[]>>();

/**
 * Queues a record write on the index; resolves with its version once the log has it and this
 * node applied it (with replication), or once the store has it too (one process).
 */
export function groupWrite(
  ctx: VersionContext,
  ref: IndexRef,
  change: Pending["change"],
  deadline?: WriteDeadline,
): Promise<VersionId> {
  let byIndex = queues.get(ctx);
  if (byIndex === undefined) {
    byIndex = new Map();
    queues.set(ctx, byIndex);
  }
  let queue = byIndex.get(ref.id);
  const first = queue === undefined;
  if (queue === undefined) {
    queue = [];
    byIndex.set(ref.id, queue);
  }
  const written = new Promise<VersionId>((resolve, reject) => queue.push({ change, deadline, resolve, reject }));
  // One drain per index in the lock's queue; it takes whatever has queued by the time it runs.
  if (first) void drain(ctx, ref, byIndex);
  return written;
}

async function drain(ctx: VersionContext, ref: IndexRef, byIndex: Map<string, Pending[]>): Promise<void> {
  for (;;) {
    const queue = byIndex.get(ref.id);
    if (queue === undefined || queue.length === 0) {
      byIndex.delete(ref.id);
      return;
    }
    const batch = queue.splice(0, MAX_BATCH);
    try {
      // A batch overtaken by another node's entry is put back and made again once caught up
      // (IndexLocks.run); each attempt computes its versions from what this node has applied.
      await ctx.locks.run(ref.id, () => commitBatch(ctx, ref, batch), { clientWaits: true });
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  }
}

/** Computes the batch's changes on top of the active version and commits them as one entry. */
async function commitBatch(ctx: VersionContext, ref: IndexRef, batch: Pending[]): Promise<void> {
  // Writes whose clients were answered already (a store that hangs, D-356) are not made.
  const live = batch.filter((p) => {
    if (!p.deadline?.expired()) return true;
    p.reject(p.deadline.answer());
    return false;
  });
  batch.splice(0, batch.length, ...live);
  if (batch.length === 0) return;
  const admission = await Admission.open(ctx, ref);
  const taken: { item: Pending; change: RecordChange; rewritten: string[]; deleted: string[] }[] = [];
  for (const item of batch) {
    try {
      const upserts = item.change.upserts ?? [];
      const { version, parent, deletes } = await admission.admit(item.change);
      taken.push({
        item,
        change: { version, parent, upserts, deletes, activate: true },
        rewritten: upserts.map((r) => r.id),
        deleted: item.change.deletes ?? [],
      });
    } catch (error) {
      // This write alone is refused; the others go on without it.
      item.reject(error);
    }
  }
  if (taken.length === 0) return;
  // The store held the admission past a write's bound: the others are admitted again without it,
  // each version building on the one before.
  if (taken.some((t) => t.item.deadline?.expired())) {
    batch.splice(0, batch.length, ...taken.map((t) => t.item));
    return commitBatch(ctx, ref, batch);
  }
  for (const t of taken) t.item.deadline?.commit();
  try {
    await ctx.engine.applyChanges!(
      ref.id,
      taken.map((t) => t.change),
    );
  } catch (error) {
    if (error instanceof StaleAppendError) {
      // Made again from scratch by the lock's retry: the refused ones stay refused.
      batch.splice(0, batch.length, ...taken.map((t) => t.item));
    }
    throw error;
  }
  if (ctx.replica) {
    // In the log and applied: the rows are this node's to record with its next store batch,
    // which took them as it applied the entry (replication/store-backfill.ts, D-299).
    for (const t of taken) t.item.resolve(t.change.version);
    batch.length = 0;
    return;
  }
  const now = ctx.now();
  const rows = async (): Promise<ChangeRow[]> => {
    const made: ChangeRow[] = [];
    for (const t of taken) {
      made.push({
        indexId: ref.id,
        version: t.change.version,
        parent: t.change.parent,
        kind: "change",
        records: await ctx.engine.count(ref.id, t.change.version),
        createdAt: now,
        purgedRecordId: null,
        purgedBy: null,
        rewritten: t.rewritten,
        deleted: t.deleted,
      });
    }
    return made;
  };
  // One process: the store is the record of what is live, written under the lock; when it
  // refuses, the whole batch is withdrawn from the engine and every writer in it gets the error.
  await undoOnFailure(
    ctx,
    ref.id,
    taken.map((t) => t.change.version),
    async () => recordChanges(ctx.db, await rows(), { activate: true, ifAbsent: false }),
  );
  ctx.catalog.setActive(ref.id, taken.at(-1)!.change.version);
  for (const t of taken) t.item.resolve(t.change.version);
  // The batch's writers are answered; a failure now would reject the ones already resolved.
  batch.length = 0;
}
