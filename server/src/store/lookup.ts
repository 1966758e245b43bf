// Lookups on the request path (an API key by its hash, an index by its name), read from the
// region's read replica when there is one (DATABASE_READ_URL, docs/replication.md): a search in a
// far region then does not cross to the primary, and goes on while the primary is unreachable.
// A replica trails its primary: a row it lacks (a key made a moment ago) is read from the primary.
import type { Logger } from "../log.ts";
import { storeWithin } from "./errors.ts";
import type { Db } from "./open.ts";

/** Runs `read` where the row is: undefined only when neither the replica nor the primary has it. */
export type Lookup = <T>(read: (db: Db) => Promise<T | undefined>) => Promise<T | undefined>;

/**
 * How long a lookup waits for a PostgreSQL server (`bounded`): past it the store counts as
 * unreachable, and a search goes on from its cache (D-350). PGlite, in process, is not bounded.
 */
export const LOOKUP_WAIT_MS = 2_000;

const readBounded = <T>(read: (db: Db) => Promise<T | undefined>, db: Db, bounded: boolean) =>
  bounded ? storeWithin(LOOKUP_WAIT_MS, "a lookup", read(db)) : read(db);

export const primaryOnly =
  (primary: Db, options: { bounded?: boolean } = {}): Lookup =>
  (read) =>
    readBounded(read, primary, options.bounded ?? false);

/** At most one warning this often: a replica that is down would otherwise log every request. */
const WARN_EVERY_MS = 10_000;

export function replicaFirst(primary: Db, replica: Db, log: Logger | undefined): Lookup {
  let warnedAt = 0;
  return async (read) => {
    try {
      const found = await readBounded(read, replica, true);
      if (found !== undefined) return found;
    } catch (error) {
      // A replica down, not accepting connections yet, or not a copy of this database: the
      // primary answers instead, and the log says why.
      if (Date.now() - warnedAt >= WARN_EVERY_MS) {
        warnedAt = Date.now();
        log?.warn("the read replica (DATABASE_READ_URL) did not answer a lookup; reading the primary", {
          error: (error as Error).message,
        });
      }
    }
    return readBounded(read, primary, true);
  };
}
