// Record changes (docs/versions.md): each one becomes `<major of active>.<next minor>` and is made
// active in the same step, so the next search sees it. A major with enough changes on top is
// checkpointed in the background.
import { and, eq, max, type SQL, sql } from "drizzle-orm";
import { NotFoundError, QuotaExceededError } from "../../domain/errors.ts";
import { formatVersion, majorOf, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import { indexes, tombstones, versions } from "../../store/schema.ts";
import type { Db } from "../../store/open.ts";
import type { IndexRef } from "../catalog.ts";
import { coalesce } from "./coalesce.ts";
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
  const version = await ctx.locks
    .run(ref.id, () => writeChange(ctx, ref, change, (p) => (stored = p)))
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

/**
 * Records a change in the store in one statement (one round trip, atomic like a transaction):
 * its version row, the index's active version, and the tombstones (rewritten ids lose theirs,
 * deleted and purged ids get one: docs/versions.md). It took five round trips before (begin,
 * three statements, commit), all of them on the index's serial write path.
 */
async function recordChange(
  db: Db,
  c: {
    indexId: string;
    version: VersionId;
    parent: VersionId;
    kind: "change" | "purge";
    records: number;
    createdAt: number;
    purgedRecordId: string | null;
    purgedBy: string | null;
    activate: boolean;
    /** With replication a replica may have recorded the row already. */
    ifAbsent: boolean;
    rewritten: string[];
    deleted: string[];
  },
): Promise<void> {
  const parts: SQL[] = [
    sql`_v as (insert into ${versions} (index_id, version, major, minor, parent, kind, state, records, created_at, purged_record_id, purged_by)
      values (${c.indexId}, ${c.version}, ${majorOf(c.version)}, ${minorOf(c.version)}, ${c.parent}, ${c.kind}, 'ready',
        ${c.records}, ${c.createdAt}, ${c.purgedRecordId}, ${c.purgedBy})
      ${c.ifAbsent ? sql`on conflict do nothing` : sql``} returning 1)`,
  ];
  if (c.activate) {
    parts.push(sql`_a as (update ${indexes} set active_version = ${c.version} where id = ${c.indexId} returning 1)`);
  }
  // One statement must not change a row twice: an id both rewritten and deleted is deleted.
  const deleted = [...new Set(c.deleted)];
  const rewritten = c.rewritten.filter((id) => !deleted.includes(id));
  if (rewritten.length) {
    const ids = sql.join(
      rewritten.map((id) => sql`${id}`),
      sql`, `,
    );
    parts.push(
      sql`_r as (delete from ${tombstones} where index_id = ${c.indexId} and record_id in (${ids}) returning 1)`,
    );
  }
  if (deleted.length) {
    const rows = sql.join(
      deleted.map((id) => sql`(${c.indexId}, ${id}, ${c.version}, ${c.createdAt})`),
      sql`, `,
    );
    parts.push(
      sql`_d as (insert into ${tombstones} (index_id, record_id, version, created_at) values ${rows}
        on conflict (index_id, record_id) do update set version = excluded.version, created_at = excluded.created_at
        returning 1)`,
    );
  }
  await db.execute(sql`with ${sql.join(parts, sql`, `)} select 1`);
}

/**
 * What a write needs to know of its parent, in one round trip: its record count (for the quota)
 * and the ids of tombstones newer than it (for tombstonesToCarry). Nothing when the store has no
 * row for it (an empty index's version 0).
 */
async function parentFacts(
  db: Db,
  indexId: string,
  parent: VersionId,
): Promise<{ records: number | undefined; newer: string[] }> {
  const [row] = await db
    .select({
      records: versions.records,
      // Qualified by hand: drizzle names the outer columns unqualified, which inside the
      // subquery would mean the tombstone's own.
      newer: sql<unknown>`(select coalesce(json_agg(t.record_id), '[]'::json) from ${tombstones} t
        where t.index_id = ${versions}.index_id and t.created_at > ${versions}.created_at)`,
    })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), eq(versions.version, parent)))
    .limit(1);
  if (!row) return { records: undefined, newer: [] };
  // Drivers differ: one parses json, another may hand it over as text.
  const newer = (typeof row.newer === "string" ? JSON.parse(row.newer) : row.newer) as string[];
  return { records: row.records ?? undefined, newer };
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

/**
 * A delete must outlive branching (docs/versions.md, tombstones): when the parent was created
 * before some delete that happened elsewhere, the ids that delete removed but the parent still
 * holds are deleted again in the new version.
 */
async function tombstonesToCarry(
  ctx: VersionContext,
  indexId: string,
  parent: VersionId,
  newer: string[],
  upserts: SearchRecord[],
): Promise<string[]> {
  const rewritten = new Set(upserts.map((r) => r.id));
  const carried: string[] = [];
  for (const recordId of newer) {
    if (!rewritten.has(recordId) && (await ctx.engine.get(indexId, parent, recordId))) carried.push(recordId);
  }
  return carried;
}
