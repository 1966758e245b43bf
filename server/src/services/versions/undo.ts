// Keeping the engine and the store in step when the store refuses what the engine already holds.
import { NotFoundError } from "../../domain/errors.ts";
import type { VersionId } from "../../domain/version-id.ts";
import type { VersionContext } from "./context.ts";
import { indexExists } from "./rows.ts";

/**
 * Runs the steps after the engine wrote `version` (or a group commit's versions, each built on
 * the one before); when one fails, the engine's versions are withdrawn, newest first, before the
 * error goes on, so engine and store both stay at the previous version and the ids are free for
 * the next write. Before, the engine stayed one version ahead and every later write to the index
 * failed until a restart (issue 15, finding 1).
 */
export async function undoOnFailure(
  ctx: VersionContext,
  indexId: string,
  version: VersionId | VersionId[],
  steps: () => Promise<void>,
): Promise<void> {
  try {
    await steps();
  } catch (error) {
    for (const made of (Array.isArray(version) ? version : [version]).toReversed()) {
      await ctx.engine.dropVersion(indexId, made).catch(async (dropError: Error) => {
        // Start-up reconciliation records what stays behind, so the id is never reused. An index
        // deleted meanwhile took the version with it: that is the deletion's doing, no fault (a
        // store that cannot say counts as the index still there).
        const deleted =
          error instanceof NotFoundError ||
          (await indexExists(ctx.db, indexId).then(
            (exists) => !exists,
            () => false,
          ));
        (deleted ? ctx.log.debug : ctx.log.error)("could not withdraw a version the store did not record", {
          index: indexId,
          version: made,
          error: dropError.message,
        });
      });
    }
    throw error;
  }
}
