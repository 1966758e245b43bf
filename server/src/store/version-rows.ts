// Version rows written many at a time in one statement (a change and its group, a replica's
// backfill): the column list, and the rows as one array per column (sql-array.ts, D-294).
// Building a backfill batch's values row by row took about a seventh of an applying node's busy
// time at 500 writes/s (bench/RESULTS.md, Replication).
import { type SQL, sql } from "drizzle-orm";
import type { versions } from "./schema.ts";
import { array } from "./sql-array.ts";

export type VersionInsert = typeof versions.$inferInsert;

export const VERSION_COLUMNS = sql.raw(
  "index_id, version, major, minor, parent, kind, state, records, created_at, purged_record_id, purged_by",
);

/** The rows as a relation `v` with VERSION_COLUMNS, in the order given: `select … from ${versionRows(rows)}`. */
export function versionRows(rows: VersionInsert[]): SQL {
  const column = <T>(pick: (r: VersionInsert) => T) => array(rows.map(pick));
  return sql`unnest(${column((r) => r.indexId)}::text[], ${column((r) => r.version)}::text[],
      ${column((r) => r.major)}::int[], ${column((r) => r.minor)}::int[], ${column((r) => r.parent ?? null)}::text[],
      ${column((r) => r.kind)}::text[], ${column((r) => r.state)}::text[], ${column((r) => r.records ?? null)}::bigint[],
      ${column((r) => r.createdAt)}::bigint[], ${column((r) => r.purgedRecordId ?? null)}::text[],
      ${column((r) => r.purgedBy ?? null)}::text[])
    as v(${VERSION_COLUMNS})`;
}

/**
 * `(…), (…)` for `values`, a parameter per value: for the few rows of one process's write (and a
 * checkpoint's carried change), where arrays measured no cheaper than values (D-294).
 */
export function versionValues(rows: VersionInsert[]): SQL {
  return sql.join(
    rows.map(
      (r) =>
        sql`(${r.indexId}, ${r.version}, ${r.major}::int, ${r.minor}::int, ${r.parent ?? null}, ${r.kind},
          ${r.state}, ${r.records ?? null}::bigint, ${r.createdAt}::bigint, ${r.purgedRecordId ?? null},
          ${r.purgedBy ?? null})`,
    ),
    sql`, `,
  );
}
