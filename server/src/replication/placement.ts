// Which indexes this node holds (D-385, docs/replication.md "Data placement"). With replication an
// index's records are kept only by the nodes of its service's regions: the others pass over its
// entries, never fetch its files, and answer 421 for it, naming the regions that hold it. A
// service none of whose regions runs Sift (no endpoint of its own is configured for any of them)
// is held by every region, as before placement, so that no index is held nowhere. A service's
// regions never change, so a node's answer for an index, once known, is kept.
import { eq } from "drizzle-orm";
import type { RegionEndpoint } from "../domain/errors.ts";
import type { Logger } from "../log.ts";
import type { Db } from "../store/open.ts";
import { indexes, services } from "../store/schema.ts";

export class Placement {
  readonly region: string;
  private readonly regionUrls: Readonly<Partial<Record<string, string>>>;
  /** Regions that run Sift: this one, and those with an endpoint of their own. */
  private readonly deployed: ReadonlySet<string>;
  private readonly db: Db;
  private readonly log: Logger;
  /** Each index's answer, once its store row was read. */
  private readonly known = new Map<string, boolean>();

  constructor(deps: { region: string; regionUrls: Readonly<Partial<Record<string, string>>>; db: Db; log: Logger }) {
    this.region = deps.region;
    this.regionUrls = deps.regionUrls;
    this.deployed = new Set([deps.region, ...Object.keys(deps.regionUrls)]);
    this.db = deps.db;
    this.log = deps.log;
  }

  /** Whether this node holds the indexes of a service placed in `regions`. */
  holdsRegions(regions: readonly string[]): boolean {
    return regions.includes(this.region) || !regions.some((r) => this.deployed.has(r));
  }

  /** The regions of `regions` that run Sift, with their endpoints where they have their own. */
  where(regions: readonly string[]): RegionEndpoint[] {
    return regions
      .filter((r) => this.deployed.has(r) && r !== this.region)
      .map((id) => (this.regionUrls[id] === undefined ? { id } : { id, url: this.regionUrls[id]! }));
  }

  /** Whether this node is known not to hold the index (false while that is not known yet). */
  elsewhere(indexId: string): boolean {
    return this.known.get(indexId) === false;
  }

  /**
   * Whether this node holds the index. An index whose row the store does not have yet (its
   * creation's own entries come before the row) or cannot be read now is held: applying an entry
   * a node need not hold costs room, and passing over one it should hold would lose it.
   */
  async holds(indexId: string): Promise<boolean> {
    const known = this.known.get(indexId);
    if (known !== undefined) return known;
    let row: { regions: string[] } | undefined;
    try {
      [row] = await this.db
        .select({ regions: services.regions })
        .from(indexes)
        .innerJoin(services, eq(services.id, indexes.serviceId))
        .where(eq(indexes.id, indexId));
    } catch (error) {
      this.log.warn("could not read an index's regions; holding it meanwhile", {
        index: indexId,
        error: (error as Error).message,
      });
      return true;
    }
    if (row === undefined) return true;
    const holds = this.holdsRegions(row.regions);
    this.known.set(indexId, holds);
    return holds;
  }
}
