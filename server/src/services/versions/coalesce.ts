// Coalesce (docs/versions.md): the active version written out as a self-contained checkpoint with
// the next major id, so reads stop walking a long chain of changes. Built outside the index's
// write lock where the engine can (D-231): writes go on meanwhile, and what they changed is
// carried onto the checkpoint as its first minor when it goes live.
import { and, eq, gt } from "drizzle-orm";
import { formatVersion, isMajorVersion, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { RecordChange } from "../../ports/engine.ts";
import { versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { undoOnFailure } from "./undo.ts";
import { recordChanges, recordLiveAtNow } from "./change-rows.ts";
import { setActive, type VersionContext } from "./context.ts";
import { erasePurgedSince } from "./erase.ts";
import { insertVersion, liveVersion, rethrowUnlessDeleted, takeMajor, updateVersion } from "./rows.ts";

/**
 * Writes the active version as a checkpoint and makes it (with the writes made meanwhile on top)
 * active; resolves with the checkpoint's id. With nothing accumulated (the active version is
 * already a major) it changes nothing. `clientWaits`: asked over HTTP, so with replication its
 * adoption waits for this node as a record write does, then answers 503 (D-344).
 */
export async function coalesce(
  ctx: VersionContext,
  ref: IndexRef,
  options: { minChain?: number; clientWaits?: boolean } = {},
): Promise<VersionId> {
  const { engine } = ctx;
  if (!engine.buildCheckpoint || !engine.changesSince || !engine.adoptCheckpoint) {
    return ctx.locks.run(ref.id, () => coalesceLocked(ctx, ref, options));
  }
  const from = await liveVersion(ctx, ref.id);
  if (!worthIt(from, options)) return from;
  // An automatic one is left to a build already under way, here or in another region.
  if (options.minChain !== undefined && (await checkpointPending(ctx, ref.id))) return from;
  const startedAt = ctx.now();
  const clientWaits = options.clientWaits ?? false;
  const { major, version } = await addPending(ctx, ref, from, startedAt);
  let records: number;
  try {
    ({ records } = await engine.buildCheckpoint(ref.id, from, major, { clientWaits }));
  } catch (error) {
    await updateVersion(ctx.db, ref.id, version, { state: "failed" });
    return rethrowUnlessDeleted(ctx.db, ref.id, error);
  }
  // The index deleted while the checkpoint went live (its engine index dropped under the adoption
  // or the activation) is NotFound, as during the build.
  const adoption = async () => {
    const live = await liveVersion(ctx, ref.id);
    const net = live === from ? { upserts: [], deletes: [] } : await engine.changesSince!(ref.id, from, live);
    if (net === null) {
      // Another version went live meanwhile (an activation): the checkpoint stays a rollback point.
      await engine.adoptCheckpoint!(ref.id, {
        from,
        major,
        records,
        carry: null,
        expectActive: live,
        live: false,
        clientWaits,
      });
      await updateVersion(ctx.db, ref.id, version, { state: "ready", records });
      ctx.log.info("coalesced; another version went live meanwhile", { index: ref.id, from, version, live });
      return version;
    }
    const carry: RecordChange | null =
      net.upserts.length || net.deletes.length
        ? {
            version: formatVersion(major, 1),
            parent: version,
            upserts: net.upserts,
            deletes: net.deletes,
            activate: true,
          }
        : null;
    const target = carry?.version ?? version;
    await engine.adoptCheckpoint!(ref.id, { from, major, records, carry, expectActive: live, live: true, clientWaits });
    const liveAt = ctx.replica?.liveAt(ref.id);
    // Dated when it went live, after the writes it carries: retention counts it as newer than they
    // are. The ids they deleted are deleted again by the carry, with tombstones as new as it is:
    // a branch made later from the checkpoint (which still holds them) deletes them too.
    const adoptedAt = ctx.now();
    await updateVersion(ctx.db, ref.id, version, { state: "ready", records, createdAt: adoptedAt });
    const store = async () => {
      if (carry) {
        const row = {
          indexId: ref.id,
          version: carry.version,
          parent: version,
          kind: "change" as const,
          records: await engine.count(ref.id, carry.version),
          createdAt: adoptedAt + 1,
          purgedRecordId: null,
          purgedBy: null,
          rewritten: [],
          deleted: carry.deletes,
        };
        await recordChanges(ctx.db, [row], { activate: !ctx.replica, ifAbsent: Boolean(ctx.replica), liveAt });
      } else if (!ctx.replica) {
        await setActive(ctx, ref.id, version);
      } else if (liveAt) {
        await recordLiveAtNow(ctx.db, ref.id, liveAt);
      }
    };
    // With replication the log has it now; alone, the engine's carry is withdrawn if the store fails.
    if (ctx.replica || !carry) await store();
    else await undoOnFailure(ctx, ref.id, carry.version, store);
    ctx.catalog.setActive(ref.id, target);
    // A purge made while it was built did not reach it (a build in progress is not purged).
    await erasePurgedSince(ctx, ref.id, startedAt);
    ctx.log.info("coalesced", { index: ref.id, from, version, carried: carry ? live : undefined });
    return version;
  };
  const adopted = ctx.locks.run(ref.id, adoption, { clientWaits });
  return adopted.catch((error) => rethrowUnlessDeleted(ctx.db, ref.id, error));
}

/**
 * A checkpoint pending this long is taken for dead (its builder stopped): the next automatic one
 * no longer waits for it. Building 300,000 records takes 4 s on a busy 2-core machine.
 */
const BUILDING_FOR_MS = 10 * 60_000;

/** Whether a checkpoint of the index, started in the last BUILDING_FOR_MS, is still being built. */
async function checkpointPending(ctx: VersionContext, indexId: string): Promise<boolean> {
  const [row] = await ctx.db
    .select({ version: versions.version })
    .from(versions)
    .where(
      and(
        eq(versions.indexId, indexId),
        eq(versions.kind, "checkpoint"),
        eq(versions.state, "pending"),
        gt(versions.createdAt, ctx.now() - BUILDING_FOR_MS),
      ),
    )
    .limit(1);
  return row !== undefined;
}

/** Automatic: a chain shorter than the threshold (a checkpoint ran since it was decided) stays. */
function worthIt(from: VersionId, options: { minChain?: number }): boolean {
  if (isMajorVersion(from)) return false;
  return options.minChain === undefined || minorOf(from) >= options.minChain;
}

async function addPending(ctx: VersionContext, ref: IndexRef, from: VersionId, createdAt: number) {
  const major = await takeMajor(ctx.db, ref.id);
  const version = formatVersion(major);
  await insertVersion(ctx.db, {
    indexId: ref.id,
    version,
    major,
    minor: 0,
    parent: from,
    kind: "checkpoint",
    state: "pending",
    createdAt,
  });
  return { major, version };
}

/** The checkpoint in one step, under the index's write lock (an engine without the two steps). */
async function coalesceLocked(ctx: VersionContext, ref: IndexRef, options: { minChain?: number }): Promise<VersionId> {
  const from = await liveVersion(ctx, ref.id);
  if (!worthIt(from, options)) return from;
  const { major, version } = await addPending(ctx, ref, from, ctx.now());
  try {
    const { records } = await ctx.engine.checkpoint(ref.id, from, major);
    await updateVersion(ctx.db, ref.id, version, { state: "ready", records });
  } catch (error) {
    await updateVersion(ctx.db, ref.id, version, { state: "failed" });
    return rethrowUnlessDeleted(ctx.db, ref.id, error);
  }
  // Only over the version it copied: a write another region made meanwhile must not be lost.
  await setActive(ctx, ref.id, version, { ifActive: from });
  ctx.log.info("coalesced", { index: ref.id, from, version });
  return version;
}
