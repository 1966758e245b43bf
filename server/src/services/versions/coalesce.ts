// Coalesce (docs/versions.md): the active version written out as a self-contained checkpoint with
// the next major id, so reads stop walking a long chain of changes.
import { formatVersion, isMajorVersion, minorOf, type VersionId } from "../../domain/version-id.ts";
import { versions } from "../../store/schema.ts";
import type { IndexRef } from "../catalog.ts";
import { setActive, type VersionContext } from "./context.ts";
import { liveVersion, rethrowUnlessDeleted, takeMajor, updateVersion } from "./rows.ts";

/**
 * Writes the active version as a checkpoint and makes it active. With nothing accumulated (the
 * active version is already a major) it changes nothing.
 */
export function coalesce(ctx: VersionContext, ref: IndexRef, options: { minChain?: number } = {}): Promise<VersionId> {
  return ctx.locks.run(ref.id, async () => {
    const from = await liveVersion(ctx, ref.id);
    if (isMajorVersion(from)) return from;
    // Automatic: decided when a write crossed the threshold, but other writes (and maybe another
    // checkpoint) may have run since; a chain shorter than the threshold is left alone.
    if (options.minChain !== undefined && minorOf(from) < options.minChain) return from;
    const major = await takeMajor(ctx.db, ref.id);
    const version = formatVersion(major);
    await ctx.db.insert(versions).values({
      indexId: ref.id,
      version,
      major,
      minor: 0,
      parent: from,
      kind: "checkpoint",
      state: "pending",
      createdAt: ctx.now(),
    });
    try {
      const { records } = await ctx.engine.checkpoint(ref.id, from, major);
      await updateVersion(ctx.db, ref.id, version, { state: "ready", records });
    } catch (error) {
      await updateVersion(ctx.db, ref.id, version, { state: "failed" });
      return rethrowUnlessDeleted(ctx.db, ref.id, error);
    }
    // Only over the version it copied: a write another region made meanwhile must not be lost.
    await setActive(ctx, ref.id, version, from);
    ctx.log.info("coalesced", { index: ref.id, from, version });
    return version;
  });
}
