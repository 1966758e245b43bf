// What a record change reads and writes in the store besides the engine (docs/versions.md): the
// facts of its parent, the next minor, the tombstones a branch carries, and the rows it leaves.
// Shared by single writes (changes.ts) and group commits (group-commit.ts).
import { and, eq, type SQL, sql } from "drizzle-orm";
import { majorOf, minorOf, type VersionId } from "../../domain/version-id.ts";
import type { SearchRecord } from "../../ports/engine.ts";
import { type Db, rowsOf } from "../../store/open.ts";
import { recordActiveAt } from "../../store/active-at.ts";
import { indexes, tombstones, versions } from "../../store/schema.ts";
import { VERSION_COLUMNS, versionValues } from "../../store/version-rows.ts";
import type { LiveAt, VersionContext } from "./context.ts";

/** One change as the store records it. */
export interface ChangeRow {
  indexId: string;
  version: VersionId;
  parent: VersionId;
  kind: "change" | "purge";
  records: number;
  createdAt: number;
  purgedRecordId: string | null;
  purgedBy: string | null;
  rewritten: string[];
  deleted: string[];
}

/**
 * Records changes of one index, in version order, in one statement (one round trip, atomic like
 * a transaction): their version rows, the index's active version (the last one's), and the
 * tombstones (rewritten ids lose theirs, deleted and purged ids get one: docs/versions.md). It
 * took five round trips per change before (begin, three statements, commit), all of them on the
 * index's serial write path.
 */
export async function recordChanges(
  db: Db,
  rows: ChangeRow[],
  options: {
    activate: boolean;
    /** With replication a replica may have recorded the rows already. */
    ifAbsent: boolean;
    /**
     * With replication, the index's active version as this node applied it: recorded unless the
     * store holds one set at a later log position. Every node records it every 100 ms; the writer
     * records it right after answering, so that GET /v1/regions counts the write within
     * milliseconds (D-278, D-295).
     */
    liveAt?: LiveAt | undefined;
  },
): Promise<void> {
  const last = rows.at(-1);
  if (last === undefined) return;
  const indexId = last.indexId;
  const values = versionValues(
    rows.map((c) => ({
      ...c,
      major: majorOf(c.version),
      minor: minorOf(c.version),
      state: "ready" as const,
    })),
  );
  const parts: SQL[] = [
    sql`_v as (insert into ${versions} (${VERSION_COLUMNS})
      values ${values} ${options.ifAbsent ? sql`on conflict do nothing` : sql``} returning 1)`,
  ];
  // With replication (and no `activate`), the active version to record as of a log position; the
  // statement answers whether it was recorded (D-283).
  const liveAt = options.activate ? undefined : options.liveAt;
  if (options.activate) {
    parts.push(sql`_a as (update ${indexes} set active_version = ${last.version} where id = ${indexId} returning 1)`);
  } else if (liveAt) {
    parts.push(sql`_a as (${recordLiveAt(indexId, liveAt)} returning 1)`);
  }
  // One statement must not change a row twice: what the last change did to an id is what stays
  // (an id both rewritten and deleted by one change is deleted).
  const outcome = new Map<string, { deletedBy: ChangeRow } | "rewritten">();
  for (const c of rows) {
    for (const id of c.rewritten) outcome.set(id, "rewritten");
    for (const id of c.deleted) outcome.set(id, { deletedBy: c });
  }
  const rewritten = [...outcome].filter(([, o]) => o === "rewritten").map(([id]) => id);
  const deleted = [...outcome].flatMap(([id, o]) => (o === "rewritten" ? [] : [{ id, by: o.deletedBy }]));
  if (rewritten.length) {
    const ids = sql.join(
      rewritten.map((id) => sql`${id}`),
      sql`, `,
    );
    parts.push(
      sql`_r as (delete from ${tombstones} where index_id = ${indexId} and record_id in (${ids}) returning 1)`,
    );
  }
  if (deleted.length) {
    const tombstoneRows = sql.join(
      deleted.map(({ id, by }) => sql`(${indexId}, ${id}, ${by.version}, ${by.createdAt})`),
      sql`, `,
    );
    parts.push(
      sql`_d as (insert into ${tombstones} (index_id, record_id, version, created_at) values ${tombstoneRows}
        on conflict (index_id, record_id) do update set version = excluded.version, created_at = excluded.created_at
        returning 1)`,
    );
  }
  const statement = sql`with ${sql.join(parts, sql`, `)} select ${liveAt ? sql`(select count(*) from _a)::int` : sql`1`} as live`;
  // Replicas insert the same rows in the background (in the same order); should PostgreSQL still
  // pick this statement as a deadlock's victim, it is safe to run again.
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await db.execute(statement);
      if (liveAt && liveOf(result) === 0) recordLiveAtLater(db, indexId, liveAt);
      return;
    } catch (error) {
      const code = ((error as { cause?: { code?: string } }).cause ?? (error as { code?: string })).code;
      if (code !== "40P01" || attempt >= 3) throw error;
    }
  }
}

/**
 * With replication, the index's active version as of a log position, in the shared store (what
 * GET /v1/regions counts lag against), unless the store holds one from a later position. Not
 * waited for: while a node's batch holds the row, the update is made again in the background,
 * once that batch is done (D-283); waiting made a write's p99 five times longer at 250/s (D-278).
 */
function recordLiveAt(indexId: string, { version, seq }: LiveAt): SQL {
  return recordActiveAt(indexId, version, seq, { skipLocked: true });
}

/** recordLiveAt on its own, made again in the background when another transaction held the row. */
export async function recordLiveAtNow(db: Db, indexId: string, liveAt: LiveAt): Promise<void> {
  const result = await db.execute(sql`with _a as (${recordLiveAt(indexId, liveAt)} returning 1)
    select count(*)::int as live from _a`);
  if (liveOf(result) === 0) recordLiveAtLater(db, indexId, liveAt);
}

/**
 * The update recordLiveAt skipped, waiting for the row this time, off the write's path. The
 * batch that held the row may have recorded an older version (its node's), and GET /v1/regions
 * read that until the writer's node's next batch, up to 100 ms later. Nothing to do when the store
 * already holds a later position (which also made the first update skip).
 */
function recordLiveAtLater(db: Db, indexId: string, { version, seq }: LiveAt): void {
  const update = db.execute(recordActiveAt(indexId, version, seq));
  // biome-ignore lint/plugin: best effort; the node's next store batch records it as well.
  void update.catch(() => undefined);
}

/** The `live` column of a statement's one row (0: the update of the active version was skipped). */
function liveOf(result: unknown): number {
  return Number(rowsOf<{ live: unknown }>(result)[0]?.live ?? 1);
}

/** What a write needs to know of its parent: see parentFacts. */
export interface ParentFacts {
  records: number | undefined;
  newer: string[];
}

/**
 * The ids of the index's tombstones newer than the `versions` row in the query (its parent), as
 * JSON. Qualified by hand: drizzle names the outer columns unqualified, which inside the subquery
 * would mean the tombstone's own.
 */
const newerTombstones = sql<unknown>`(select coalesce(json_agg(t.record_id), '[]'::json) from ${tombstones} t
  where t.index_id = ${versions}.index_id and t.created_at > ${versions}.created_at)`;

/** The parent's facts as read with newerTombstones; none without a row (an empty index's version 0). */
function factsOf(row: { records: number | null; newer: unknown } | undefined): ParentFacts {
  if (!row) return { records: undefined, newer: [] };
  // Drivers differ: one parses json, another may hand it over as text.
  const newer = (typeof row.newer === "string" ? JSON.parse(row.newer) : (row.newer ?? [])) as string[];
  return { records: row.records ?? undefined, newer };
}

/**
 * What a write needs to know of its parent, in one round trip: its record count (for the quota)
 * and the ids of tombstones newer than it (for tombstonesToCarry). Nothing when the store has no
 * row for it (an empty index's version 0).
 */
export async function parentFacts(db: Db, indexId: string, parent: VersionId): Promise<ParentFacts> {
  const [row] = await db
    .select({ records: versions.records, newer: newerTombstones })
    .from(versions)
    .where(and(eq(versions.indexId, indexId), eq(versions.version, parent)))
    .limit(1);
  return factsOf(row);
}

/**
 * Without replication, what a write builds on, in one round trip: the active version, the highest
 * minor of its major, and parentFacts of it. Three round trips before, two of them one after the
 * other, on the index's serial write path. Undefined when the index is gone. Written as SQL, not
 * with the query builder: building this select took 0.25 ms of CPU per write (bench/RESULTS.md).
 */
export async function writeBase(
  db: Db,
  indexId: string,
): Promise<{ base: VersionId; minor: number; facts: ParentFacts } | undefined> {
  const result = await db.execute(sql`select i.active_version as base,
      (select max(m.minor) from ${versions} m
        where m.index_id = i.id and m.major = split_part(i.active_version, '.', 1)::int) as minor,
      ${versions}.records as records, ${newerTombstones} as newer
    from ${indexes} i left join ${versions} on ${versions}.index_id = i.id and ${versions}.version = i.active_version
    where i.id = ${indexId}`);
  const rows = rowsOf<{
    base: string;
    minor: number | string | null;
    records: number | string | null;
    newer: unknown;
  }>(result);
  const row = rows[0];
  if (row === undefined) return undefined;
  const records = row.records === null ? null : Number(row.records);
  return { base: row.base, minor: Number(row.minor ?? 0), facts: factsOf({ records, newer: row.newer }) };
}

/**
 * A delete must outlive branching (docs/versions.md, tombstones): when the parent was created
 * before some delete that happened elsewhere, the ids that delete removed but the parent still
 * holds are deleted again in the new version.
 */
export async function tombstonesToCarry(
  ctx: VersionContext,
  indexId: string,
  parent: VersionId,
  newer: string[],
  upserts: SearchRecord[],
): Promise<string[]> {
  const rewritten = new Set(upserts.map((r) => r.id));
  const carried: string[] = [];
  for (const recordId of newer) {
    if (!rewritten.has(recordId) && (await ctx.engine.get(indexId, parent, recordId))) carried.push(recordId);
  }
  return carried;
}
