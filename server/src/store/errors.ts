// Store failures the services turn into answers of their own.
import type { Logger } from "../log.ts";
import { within } from "../within.ts";

/** True when `error`, or any error it was wrapped around (the drivers wrap), carries one of `codes`. */
function hasCode(error: unknown, codes: ReadonlySet<string>): boolean {
  for (let e = error as { code?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.code !== undefined && codes.has(e.code)) return true;
  }
  return false;
}

const UNIQUE_VIOLATION = new Set(["23505"]);
/** 23503, and 23001 that PGlite's PostgreSQL 18 says of a delete an ON DELETE RESTRICT rule refuses. */
const FOREIGN_KEY_VIOLATION = new Set(["23503", "23001"]);

/** True when a write broke a unique constraint (PostgreSQL 23505), however deeply the driver wrapped it. */
export function isUniqueViolation(error: unknown): boolean {
  return hasCode(error, UNIQUE_VIOLATION);
}

/**
 * True when a write broke a foreign key: a row named that was deleted meanwhile, or a row deleted
 * that another was made to name meanwhile.
 */
export function isForeignKeyViolation(error: unknown): boolean {
  return hasCode(error, FOREIGN_KEY_VIOLATION);
}

/** Codes of a database that cannot be reached (postgres.js and Node's own), not of a bad query. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "STORE_TIMEOUT", // a bounded wait ran out: the store does not answer (storeWithin)
  "57P01", // admin_shutdown
  "57P03", // cannot_connect_now
]);

/**
 * `work`, or an error the services take for an unreachable store once it has taken `ms`: a
 * database that hangs (a frozen host, a partition) leaves its connections open and silent, and
 * its queries neither answer nor fail (D-350). The query itself goes on.
 */
export const storeWithin = <T>(ms: number, what: string, work: Promise<T>): Promise<T> =>
  within(ms, what, work, { code: "STORE_TIMEOUT" });

/** True when the store could not be reached at all: the answer is 503, try again, not a bug. */
export function isStoreUnreachable(error: unknown): boolean {
  return hasCode(error, UNREACHABLE);
}

/**
 * postgres.js (3.4.9) asks every new connection for the database's array types and drops the
 * promise of that query (porsager/postgres issue 1192). A store that goes away at that moment
 * rejects it with nobody listening, and Node ends the process: a node died so in the middle of a
 * store outage it would otherwise ride out (test/replication/store-outage.test.ts). Installed by
 * the process's entry point: such a rejection is logged; any other still ends the process, as Node
 * would end it.
 */
export function surviveDroppedStoreRejections(log: Logger): void {
  process.on("unhandledRejection", (reason) => {
    if (!isStoreUnreachable(reason)) throw reason;
    log.warn("a store query nobody waited for failed: the store does not answer", {
      error: (reason as Error).message,
    });
  });
}

/**
 * `step`, or undefined with a warning naming `what` when the store cannot be reached: for work a
 * node can do later (a node started on its read replica while the primary is down, D-276). Any
 * other failure goes on.
 */
export async function unlessStoreUnreachable<T>(
  log: Logger,
  what: string,
  step: () => Promise<T>,
): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    if (!isStoreUnreachable(error)) throw error;
    log.warn(`could not ${what}: the store does not answer`, { error: (error as Error).message });
    return undefined;
  }
}
