// The index's active version as of a position in the change log, in the shared store (what
// GET /v1/regions counts lag against). Every node records what it applied, and the writer what
// it wrote (D-278): whichever comes with the later position stays, in whatever order they arrive.
// Every node records its indexes every 100 ms, so a row another transaction holds can be left
// for the next time instead of waited for (D-285).
import { type SQL, sql } from "drizzle-orm";
import { indexes } from "./schema.ts";
import { array } from "./sql-array.ts";

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

/**
 * recordActiveAt for several indexes in one statement, leaving alone the rows other transactions
 * hold. Answers (`id`) the indexes left alone that still need the update, to try again later.
 * Nothing waits for a lock, so the order rows are locked in cannot deadlock.
 */
export function recordActiveAtMany(active: { indexId: string; version: string; seq: number }[]): SQL {
  const ids = array(active.map((a) => a.indexId));
  const versions = array(active.map((a) => a.version));
  const seqs = array(active.map((a) => a.seq));
  // Every part of one statement reads the same snapshot: the last select sees the rows as they
  // were before the update, so a row it finds behind and not updated was held by another.
  return sql`with v as (select * from unnest(${ids}::text[], ${versions}::text[], ${seqs}::bigint[]) as v(id, version, seq)),
    locked as (select l.id from ${indexes} l join v on v.id = l.id where l.log_seq < v.seq
      for no key update of l skip locked),
    u as (update ${indexes} set active_version = v.version, log_seq = v.seq from v
      where ${indexes}.id = v.id and ${indexes}.id in (select id from locked) returning ${indexes}.id)
    select v.id from v join ${indexes} b on b.id = v.id where b.log_seq < v.seq and v.id not in (select id from u)`;
}
