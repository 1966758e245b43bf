// The index's active version as of a position in the change log, in the shared store (what
// GET /v1/regions counts lag against). Every node records what it applied, and the writer what
// it wrote (D-278): whichever comes with the later position stays, in whatever order they arrive.
import { type SQL, sql } from "drizzle-orm";
import { indexes } from "./schema.ts";

/**
 * `skipLocked`: leave the row alone while another transaction holds it, instead of waiting for
 * that transaction to end (a write's own record, which must not wait: D-278, D-283).
 */
export function recordActiveAt(indexId: string, version: string, seq: number, { skipLocked = false } = {}): SQL {
  return skipLocked
    ? sql`update ${indexes} set active_version = ${version}, log_seq = ${seq}::bigint
        where id = (select l.id from ${indexes} l where l.id = ${indexId} and l.log_seq < ${seq}::bigint
          for no key update skip locked)`
    : sql`update ${indexes} set active_version = ${version}, log_seq = ${seq}::bigint
        where id = ${indexId} and log_seq < ${seq}::bigint`;
}
