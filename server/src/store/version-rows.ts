// Version rows written many at a time in one statement (a change and its group, a replica's
// backfill): the column list and each row's values in that order, in one place.
import { type SQL, sql } from "drizzle-orm";
import type { versions } from "./schema.ts";

export type VersionInsert = typeof versions.$inferInsert;

export const VERSION_COLUMNS = sql.raw(
  "index_id, version, major, minor, parent, kind, state, records, created_at, purged_record_id, purged_by",
);

/** `(…), (…)` for `values`; typed, so that it also reads as a `select … from (values …)`. */
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
