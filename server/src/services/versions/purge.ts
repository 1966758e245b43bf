// Erasure (docs/versions.md): a record purged from every retained version. The engine erases it
// from its storage; the store's counts follow; a new active version of kind `purge` is the audit
// in the version list and leaves a tombstone, so uploads not yet ingested skip the id.
import { NotFoundError, UnavailableError } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import type { IndexRef } from "../catalog.ts";
import { writeChange } from "./changes.ts";
import type { VersionContext } from "./context.ts";
import { erase } from "./erase.ts";
import { rethrowUnlessDeleted } from "./rows.ts";
import type { WriteDeadline } from "./write-deadline.ts";
import { within } from "../../within.ts";

/** Purges a record from every retained version; returns the audit version, now active. */
export function purgeRecord(
  ctx: VersionContext,
  ref: IndexRef,
  recordId: string,
  by: string,
  deadline?: WriteDeadline,
): Promise<VersionId> {
  let began = () => {};
  const running = new Promise<void>((resolve) => {
    began = resolve;
  });
  const purge = async () => {
    began();
    // The engine's erasure cannot be taken back: not started once its client was answered (D-356).
    deadline?.commit();
    if (!(await erase(ctx, ref.id, recordId))) {
      throw new NotFoundError(`record "${recordId}" does not exist in any retained version of index "${ref.name}"`);
    }
    const version = await writeChange(ctx, ref, { purge: { recordId, by } });
    ctx.log.info("purged a record", { index: ref.id, version, by });
    return version;
  };
  // Asked over HTTP: its wait for the lock and its catch-up are bounded (D-346).
  const work = ctx.locks
    .run(ref.id, purge, { clientWaits: true })
    // An index deleted while its segments were rebuilt is a 404, not a failure of the server.
    .catch((error: unknown) => rethrowUnlessDeleted(ctx.db, ref.id, error));
  const replica = ctx.replica;
  if (!replica) return work;
  // With replication its erasure entry waits for this node to apply it, as long as a checkpoint's
  // (its audit version follows it): the client is answered once it has waited as long as for a
  // record write, and the purge goes on to its audit (D-363).
  let answered = false;
  const answer = running.then(() =>
    within(replica.clientWaitMs, "a purge", work, {
      error: () => {
        answered = true;
        return new UnavailableError(
          "this node has not applied the purge yet; it is in the change log and is applied everywhere, its audit version after it: look for a purge version in the index's version list before repeating it",
          { retryAfterSeconds: 1 },
        );
      },
    }),
  );
  work.catch((error: unknown) => {
    if (answered)
      ctx.log.error("a purge whose client was answered 503 did not finish", {
        index: ref.id,
        error: (error as Error).message,
      });
  });
  return Promise.race([work, answer]);
}
