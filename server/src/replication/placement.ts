// Which indexes this node holds (D-385, docs/replication.md "Data placement"). With replication an
// index's records are kept only by the nodes of its service's regions: the others pass over its
// entries, never fetch its files, and answer 421 for it, naming the regions that hold it. A
// service none of whose regions runs Sift (no endpoint of its own is configured for any of them)
// is held by every region, as before placement, so that no index is held nowhere. A service's
// regions never change, so a node's answer for an index, once known, is kept.
import { eq } from "drizzle-orm";
import type { RegionEndpoint } from "../domain/errors.ts";
import type { Logger } from "../log.ts";
import type { Lookup } from "../store/lookup.ts";
import { indexes, services } from "../store/schema.ts";

/** After the store did not answer, indexes not read yet are held without asking it, this long. */
const STORE_DOWN_MS = 10_000;

export class Placement {
  readonly region: string;
  private readonly regionUrls: Readonly<Partial<Record<string, string>>>;
  /** Regions that run Sift: this one, and those with an endpoint of their own. */
  private readonly deployed: ReadonlySet<string>;
  /** The request path's store lookups: the region's read replica first, bounded (store/lookup.ts). */
  private readonly lookup: Lookup;
  private readonly log: Logger;
  /** Each index's answer, once its store row was read. */
  private readonly known = new Map<string, boolean>();
  /** Reads under way, one per index: the log's entry and its files' announcement ask at once. */
  private readonly reading = new Map<string, Promise<boolean>>();
  /** Until when the store counts as out of reach (STORE_DOWN_MS after it did not answer). */
  private storeDownUntil = 0;

  constructor(deps: {
    region: string;
    regionUrls: Readonly<Partial<Record<string, string>>>;
    lookup: Lookup;
    log: Logger;
  }) {
    this.region = deps.region;
    this.regionUrls = deps.regionUrls;
    this.deployed = new Set([deps.region, ...Object.keys(deps.regionUrls)]);
    this.lookup = deps.lookup;
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
   * a node need not hold costs room, and passing over one it should hold would lose it. While the
   * store is out of reach it is not asked again for STORE_DOWN_MS, so that entries do not wait on
   * it one after another.
   */
  holds(indexId: string): Promise<boolean> {
    const known = this.known.get(indexId);
    if (known !== undefined) return Promise.resolve(known);
    if (Date.now() < this.storeDownUntil) return Promise.resolve(true);
    let reading = this.reading.get(indexId);
    if (reading === undefined) {
      reading = this.read(indexId).finally(() => this.reading.delete(indexId));
      this.reading.set(indexId, reading);
    }
    return reading;
  }

  private async read(indexId: string): Promise<boolean> {
    let row: { regions: string[] } | undefined;
    try {
      row = await this.lookup((db) =>
        db
          .select({ regions: services.regions })
          .from(indexes)
          .innerJoin(services, eq(services.id, indexes.serviceId))
          .where(eq(indexes.id, indexId))
          .then((rows) => rows[0]),
      );
    } catch (error) {
      this.storeDownUntil = Date.now() + STORE_DOWN_MS;
      this.log.warn("could not read an index's regions; holding the indexes not read yet meanwhile", {
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
