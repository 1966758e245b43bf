// What a version changed (docs/versions.md, What a version changed): a record change against its
// parent, an upload against the version live when it finished, a purge from its audit, a
// checkpoint as no change at all. The engine compares the records (SearchEngine.diff); nothing is
// stored at write or ingest time but the upload's base, one id in the row finishBulk updates
// anyway (D-237).
import { and, desc, eq, lt } from "drizzle-orm";
import type { components } from "@sift/contract";
import { ConflictError, NotFoundError, NotImplementedError } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import type { VersionDiffPage } from "../../ports/engine.ts";
import { versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { storeSettled, type VersionContext } from "./context.ts";
import { rethrowUnlessDeleted, type VersionRow, versionRow } from "./rows.ts";

type VersionChanges = components["schemas"]["VersionChanges"];

/** How long a read waits for this node to apply a version the store names (replication). */
const APPLY_WAIT_MS = 2_000;

export async function versionChanges(
  ctx: VersionContext,
  ref: IndexRef,
  version: VersionId,
  page: { after?: string | undefined; limit: number },
  retried = false,
): Promise<VersionChanges> {
  await storeSettled(ctx, ref.id);
  const row = await versionRow(ctx.db, ref.id, version);
  if (!row || row.state === "dropped") {
    throw new NotFoundError(`version ${version} of index "${ref.name}" does not exist or is no longer retained`);
  }
  if (row.state !== "ready") {
    throw new ConflictError(
      `version ${version} is ${row.state}: what it changed is known once its upload has been ingested`,
    );
  }
  const records = row.records ?? (await ctx.engine.count(ref.id, version));
  const none = { added: 0, updated: 0, deleted: 0, unchanged: records };
  const answer = { version, kind: row.kind };

  if (row.kind === "checkpoint") {
    // A checkpoint holds its parent's records as they were: nothing to compare.
    return { ...answer, base: row.parent, counts: none, changes: [] };
  }
  if (row.kind === "purge") {
    // The erased id is gone from the parent too (from every version): only the audit can tell it.
    const id = row.purgedRecordId ?? "";
    // Pages are in code point order, which is the order of the ids' UTF-8 bytes.
    const listed = page.after === undefined || Buffer.compare(Buffer.from(id), Buffer.from(page.after)) > 0;
    const result: VersionChanges = {
      ...answer,
      base: row.parent,
      counts: { ...none, deleted: 1 },
      changes: listed ? [{ id, change: "purged" }] : [],
    };
    if (row.purgedBy !== null) result.purge = { recordId: id, by: row.purgedBy };
    return result;
  }

  const base = row.kind === "change" ? row.parent : await bulkBase(ctx, ref.id, row);
  const diff = ctx.engine.diff?.bind(ctx.engine);
  if (!diff) {
    throw new NotImplementedError(
      `the ${ctx.engine.name} engine does not compare versions: only what checkpoints and purges changed is known on this deployment`,
    );
  }
  const replica = ctx.replica;
  for (const v of [version, base]) {
    if (replica && v !== null && !replica.has(ref.id, v)) await replica.waitFor(ref.id, v, APPLY_WAIT_MS);
  }
  let found: VersionDiffPage;
  try {
    found = await diff(ref.id, base, version, page);
  } catch (error) {
    // Retention may have dropped either version since the rows were read (or the index may
    // have been deleted): asked again, that is a 404, or a comparison with another base.
    const stillReady = async (v: VersionId | null) =>
      v === null || (await versionRow(ctx.db, ref.id, v))?.state === "ready";
    if (retried || ((await stillReady(version)) && (await stillReady(base)))) {
      return rethrowUnlessDeleted(ctx.db, ref.id, error);
    }
    return versionChanges(ctx, ref, version, page, true);
  }
  const { counts, changes, next } = found;
  return { ...answer, base, counts, changes, ...(next === undefined ? {} : { next }) };
}

/**
 * What an upload is compared with: the version live when it finished ingesting; when that is no
 * longer retained (or the upload predates keeping it), the newest retained version of an earlier
 * major; null when there is none (every record counts as added).
 */
async function bulkBase(ctx: VersionContext, indexId: string, row: VersionRow): Promise<VersionId | null> {
  if (row.base !== null) {
    const kept = await versionRow(ctx.db, indexId, row.base);
    if (kept?.state === "ready") return kept.version;
  }
  const [earlier] = await ctx.db
    .select({ version: versions.version })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), eq(versions.state, "ready"), lt(versions.major, row.major)))
    .orderBy(desc(versions.createdAt), desc(versions.major), desc(versions.minor))
    .limit(1);
  return earlier?.version ?? null;
}
