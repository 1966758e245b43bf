// How far this node trails on each of a tenant's indexes (docs/replication.md, Health): what
// GET /v1/regions reports per region to a caller who may read the catalog. Against the shared
// store's active version, which every node records with the log position that set it, and, while
// the store does not have it yet (nodes record in batches, about every 100 ms under load), against
// the index's newest entry in the log (D-301, D-309).
import { and, asc, count, eq, gt, lte, max, ne, or, sql } from "drizzle-orm";
import { parseVersion, tryParseVersion, type VersionId } from "../domain/version-id.ts";
import type { EntryTail } from "../ports/change-log.ts";
import type { Db } from "../store/open.ts";
import { within } from "../within.ts";
import { indexes, services, versions } from "../store/schema.ts";
import type { IndexPlacement } from "./catalog.ts";

export interface IndexLag {
  indexName: string;
  activeVersion: string;
  behindVersions: number;
  lagMs: number;
  /** The index is set aside on this node (D-376): 503 here until it is brought back. */
  setAside?: true;
}

/** What the replica knows of an index here (absent without replication). */
export interface AppliedView {
  active(indexId: string): VersionId | undefined;
  /** The newest version of the index applied here, live or not. */
  newest(indexId: string): VersionId | undefined;
  /** Log position of the newest entry of the index processed here (0: none). */
  appliedSeq(indexId: string): number;
  /** The newest entry the log holds for the index: its position, when the log took it, the version it makes. */
  logTail(indexId: string): Promise<EntryTail | null>;
  /** Whether an entry of the index failed to apply here for long enough to set it aside (D-376). */
  isAside(indexId: string): boolean;
}

/** A tenant with more indexes is shown its first ones by name. */
const MAX_INDEXES = 100;
/** A log that does not answer in this time leaves the lag to what the store says. */
const LOG_LOOK_MS = 500;

export class RegionLagService {
  private readonly db: Db;
  private readonly applied: AppliedView | undefined;
  private readonly now: () => number;
  /** With replication: the indexes held in other regions are not this region's to report (D-385). */
  private readonly placement: IndexPlacement | undefined;

  constructor(db: Db, applied: AppliedView | undefined, now: () => number = Date.now, placement?: IndexPlacement) {
    this.db = db;
    this.applied = applied;
    this.now = now;
    this.placement = placement;
  }

  async forTenant(tenantId: string): Promise<IndexLag[]> {
    const rows = await this.db
      .select({
        id: indexes.id,
        name: indexes.name,
        active: indexes.activeVersion,
        logSeq: indexes.logSeq,
        regions: services.regions,
      })
      .from(indexes)
      .innerJoin(services, eq(services.id, indexes.serviceId))
      .where(eq(indexes.tenantId, tenantId))
      .orderBy(asc(indexes.name));
    const placement = this.placement;
    // The first ones held here by name: a tenant's indexes are bounded by its quota (1,000).
    const held = (placement === undefined ? rows : rows.filter((row) => placement.holdsRegions(row.regions))).slice(
      0,
      MAX_INDEXES,
    );
    return Promise.all(
      held.map(async (row): Promise<IndexLag> => {
        if (this.applied === undefined) {
          return { indexName: row.name, activeVersion: row.active, behindVersions: 0, lagMs: 0 };
        }
        const local = this.applied.active(row.id) ?? "0";
        const lag =
          this.applied.appliedSeq(row.id) >= row.logSeq || local === row.active
            ? await this.fromLog(this.applied, row.id)
            : await this.between(row.id, local, row.active);
        const aside = this.applied.isAside(row.id) ? { setAside: true as const } : {};
        return { indexName: row.name, activeVersion: local, ...lag, ...aside };
      }),
    );
  }

  /**
   * Whether the log holds an entry of the index this node has not processed, which the store does
   * not show yet: behind by the versions between the newest applied here and the newest that entry
   * makes (at least one), since that entry. A log out of reach leaves it at what the store says.
   */
  private async fromLog(applied: AppliedView, indexId: string): Promise<{ behindVersions: number; lagMs: number }> {
    const looking = within(LOG_LOOK_MS, "reading the index's newest log entry", applied.logTail(indexId));
    // biome-ignore lint/plugin: the lag then rests on the store alone; /readyz reports the log's state.
    const tail = await looking.catch(() => null);
    if (tail === null || tail.seq <= applied.appliedSeq(indexId)) return { behindVersions: 0, lagMs: 0 };
    const behindVersions = versionsUpTo(applied.newest(indexId), tail.version);
    return { behindVersions, lagMs: Math.max(0, this.now() - tail.at) };
  }

  /** Versions after `local` up to `live` (at least one: a roll back the node has not applied), and since when. */
  private async between(indexId: string, local: VersionId, live: VersionId) {
    const from = parseVersion(local);
    const to = parseVersion(live);
    const after = or(
      gt(versions.major, from.major),
      and(eq(versions.major, from.major), gt(versions.minor, from.minor)),
    );
    const upTo = or(
      sql`${versions.major} < ${to.major}`,
      and(eq(versions.major, to.major), lte(versions.minor, to.minor)),
    );
    const [row] = await this.db
      .select({ n: count(), newest: max(versions.createdAt) })
      .from(versions)
      .where(and(eq(versions.indexId, indexId), ne(versions.state, "dropped"), after, upTo));
    const [liveRow] = await this.db
      .select({ at: versions.createdAt })
      .from(versions)
      .where(and(eq(versions.indexId, indexId), eq(versions.version, live)));
    const since = row?.newest ?? liveRow?.at ?? this.now();
    return { behindVersions: Math.max(1, Number(row?.n ?? 0)), lagMs: Math.max(0, this.now() - Number(since)) };
  }
}

/**
 * How many versions come after `local` up to `newest`, counted by their ids: exact within one
 * major (its minors are numbered one by one); across majors, the newest major and its minors (a
 * lower bound: where the older major's chain ended is in entries not read). At least one, for an
 * entry that makes no version (an activation) or an id not known.
 */
export function versionsUpTo(local: VersionId | undefined, newest: VersionId | undefined): number {
  const to = newest === undefined ? null : tryParseVersion(newest);
  if (to === null) return 1;
  const from = local === undefined ? null : tryParseVersion(local);
  if (from === null || to.major > from.major) return to.minor + 1;
  return to.major === from.major ? Math.max(1, to.minor - from.minor) : 1;
}
