// The version graph as the store holds it: the `versions` rows of an index and the index's active
// version and next major id. Queries only; what they mean is up to the callers.
import { and, eq, sql } from "drizzle-orm";
import { DomainError, NotFoundError, notInThisRegionYet, indexDeletedMidway } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import type { ReplicaView } from "./context.ts";
import { isForeignKeyViolation } from "../../store/errors.ts";
import type { Db, Tx } from "../../store/open.ts";
import { indexes, versions } from "../../store/schema.ts";

export type VersionRow = typeof versions.$inferSelect;

/** Selects one version of one index (the table's key). */
export const versionKey = (indexId: string, version: VersionId) =>
  and(eq(versions.indexId, indexId), eq(versions.version, version));

export async function versionRow(db: Db, indexId: string, version: VersionId): Promise<VersionRow | undefined> {
  const [row] = await db.select().from(versions).where(versionKey(indexId, version)).limit(1);
  return row;
}

export async function updateVersion(
  db: Db,
  indexId: string,
  version: VersionId,
  values: Partial<Pick<VersionRow, "state" | "records" | "base" | "createdAt">>,
): Promise<void> {
  await db.update(versions).set(values).where(versionKey(indexId, version));
}

export async function activeVersionOf(db: Db, indexId: string): Promise<VersionId> {
  const [row] = await db.select({ v: indexes.activeVersion }).from(indexes).where(eq(indexes.id, indexId));
  if (!row) throw new NotFoundError("the index no longer exists");
  return row.v;
}

/**
 * The version writes build on: the store's active version, or with replication the one this node
 * has applied (a node that has not applied the index yet cannot write to it: 503, try again).
 */
export async function liveVersion(
  ctx: { db: Db; replica?: Pick<ReplicaView, "active" | "isDropped"> | undefined },
  indexId: string,
): Promise<VersionId> {
  if (!ctx.replica) return activeVersionOf(ctx.db, indexId);
  const active = ctx.replica.active(indexId);
  // Its deletion applied here before its store rows went: 404, not "not received yet".
  if (active === undefined && ctx.replica.isDropped(indexId)) throw indexDeletedMidway();
  if (active === undefined) {
    await activeVersionOf(ctx.db, indexId); // a deleted index is a 404
    throw notInThisRegionYet();
  }
  return active;
}

/**
 * Adds a version row. Deleting an index takes no lock its writers wait for, so one deleted since
 * the caller looked it up breaks the row's foreign key: that is NotFound, as a missing index is,
 * not a server fault (an upload started as its index was deleted answered 500).
 */
export async function insertVersion(db: Db | Tx, row: typeof versions.$inferInsert): Promise<void> {
  try {
    await db.insert(versions).values(row);
  } catch (error) {
    if (isForeignKeyViolation(error)) throw new NotFoundError("the index no longer exists");
    throw error;
  }
}

/** Draws the next major id: sequential per index, shared by bulk uploads and checkpoints. */
export async function takeMajor(db: Db, indexId: string): Promise<number> {
  const [row] = await db
    .update(indexes)
    .set({ nextMajor: sql`${indexes.nextMajor} + 1` })
    .where(eq(indexes.id, indexId))
    .returning({ major: sql<number>`${indexes.nextMajor} - 1` });
  if (!row) throw new NotFoundError("the index no longer exists");
  return Number(row.major);
}

/**
 * Rethrows an engine failure, as NotFound when the index was deleted while the engine worked on
 * it: deleting an index takes no write lock, so a write or a checkpoint in flight then finds the
 * engine's index (or its files) gone, which is the deletion's doing, not a server fault.
 */
export async function rethrowUnlessDeleted(db: Db, indexId: string, error: unknown): Promise<never> {
  if (!(error instanceof DomainError) && !(await indexExists(db, indexId))) throw indexDeletedMidway();
  throw error;
}

/** Whether the store still has the index (a deletion takes no write lock, so it may be gone midway). */
export async function indexExists(db: Db, indexId: string): Promise<boolean> {
  const [row] = await db.select({ id: indexes.id }).from(indexes).where(eq(indexes.id, indexId));
  return row !== undefined;
}
