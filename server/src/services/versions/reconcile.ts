// Start-up reconciliation: brings the store in line with the engine after a crash.
import { eq } from "drizzle-orm";
import { isMajorVersion, majorOf, minorOf } from "../../domain/version-id.ts";
import { indexes, versions } from "../../store/schema.ts";
import type { VersionContext } from "./context.ts";

/**
 * A change the engine made durable but the store never recorded (the process died between the
 * two) was never acknowledged: it is recorded as a ready, inactive version so its id is never
 * reused.
 */
export async function reconcile(ctx: VersionContext): Promise<void> {
  for (const { id } of await ctx.db.select({ id: indexes.id }).from(indexes)) {
    const known = new Set(
      (await ctx.db.select({ v: versions.version }).from(versions).where(eq(versions.indexId, id))).map((r) => r.v),
    );
    for (const v of await ctx.engine.versions(id)) {
      if (known.has(v.version) || isMajorVersion(v.version)) continue;
      await ctx.db.insert(versions).values({
        indexId: id,
        version: v.version,
        major: majorOf(v.version),
        minor: minorOf(v.version),
        parent: v.parent,
        kind: "change",
        state: "ready",
        records: v.records,
        createdAt: ctx.now(),
      });
      ctx.log.warn("recorded a version the engine kept but the store missed", { index: id, version: v.version });
    }
  }
}
