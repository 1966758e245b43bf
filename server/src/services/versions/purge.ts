// Erasure (docs/versions.md): a record purged from every retained version. The engine erases it
// from its storage; the store's counts follow; a new active version of kind `purge` is the audit
// in the version list and leaves a tombstone, so uploads not yet ingested skip the id.
import { NotFoundError } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import type { IndexRef } from "../catalog.ts";
import { writeChange } from "./changes.ts";
import type { VersionContext } from "./context.ts";
import { erase } from "./erase.ts";
import { rethrowUnlessDeleted } from "./rows.ts";
import type { WriteDeadline } from "./write-deadline.ts";

/** Purges a record from every retained version; returns the audit version, now active. */
export function purgeRecord(
  ctx: VersionContext,
  ref: IndexRef,
  recordId: string,
  by: string,
  deadline?: WriteDeadline,
): Promise<VersionId> {
  const purge = async () => {
    // The engine's erasure cannot be taken back: not started once its client was answered (D-356).
    deadline?.commit();
    if (!(await erase(ctx, ref.id, recordId))) {
      throw new NotFoundError(`record "${recordId}" does not exist in any retained version of index "${ref.name}"`);
    }
    const version = await writeChange(ctx, ref, { purge: { recordId, by } });
    ctx.log.info("purged a record", { index: ref.id, version, by });
    return version;
  };
  // Asked over HTTP: its wait for the lock and its catch-up are bounded (D-346). Its erasure entry
  // still waits for this node as long as a checkpoint's, since its audit version follows it.
  return (
    ctx.locks
      .run(ref.id, purge, { clientWaits: true })
      // An index deleted while its segments were rebuilt is a 404, not a failure of the server.
      .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error))
  );
}
