// Services and indexes of a tenant. Lookups on the search path go through a small cache because
// every query names an index; writes here (creation included: misses are cached too) invalidate
// it, so this process sees its own changes at once, and with replication every other node too
// (NodeNotices); a short TTL bounds staleness where a notice was missed.
import { and, asc, count, desc, eq, isNotNull, ne, sql } from "drizzle-orm";
import type { components } from "@sift/contract";
import { newId } from "../auth/secrets.ts";
import {
  ConflictError,
  InvalidArgumentError,
  MisdirectedError,
  NotFoundError,
  notInThisRegionYet,
  QuotaExceededError,
  type RegionEndpoint,
} from "../domain/errors.ts";
import { parseVersion } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import type { SearchEngine } from "../ports/engine.ts";
import { type NodeNotice, type NodeNotices, noNotices } from "../ports/node-notices.ts";
import { REGION_IDS, isRegionId } from "../regions.ts";
import { isForeignKeyViolation, isStoreUnreachable, isUniqueViolation } from "../store/errors.ts";
import { type Lookup, primaryOnly } from "../store/lookup.ts";
import type { Db } from "../store/open.ts";
import { indexes, services, versions } from "../store/schema.ts";
import { StoreCallTimedOut, storeStep } from "./store-deadline.ts";
import { rethrowUnlessDeleted } from "./versions/rows.ts";

type SiftService = components["schemas"]["SiftService"];
type SiftIndex = components["schemas"]["SiftIndex"];
type Visibility = "PUBLIC" | "PRIVATE";
type IndexChanged = Extract<NodeNotice, { kind: "index-changed" }>;

/** What the rest of the server needs to know about an index. */
export interface IndexRef {
  id: string;
  tenantId: string;
  name: string;
  serviceName: string;
  regions: string[];
  visibility: Visibility;
  activeVersion: string;
  createdAt: number;
}

const CACHE_TTL_MS = 5_000;
/**
 * A visibility set here or on another node wins over the one a lookup reads for this long: the
 * region's read replica may not show it yet. Not for ever, so that a change whose notice this
 * node missed is read from the store once this one's time is up.
 */
const VISIBILITY_HELD_MS = 5 * 60_000;
/** How long a lookup is still used when the store cannot be asked again. */
const STALE_IF_ERROR_MS = 15 * 60_000;

/** Per-tenant limits of the catalog (docs/api.md, Limits). */
export interface CatalogQuotas {
  indexes: number;
}
export const DEFAULT_CATALOG_QUOTAS: CatalogQuotas = { indexes: 1_000 };

/** With replication, which indexes this node holds (replication/placement.ts, D-385). */
export interface IndexPlacement {
  readonly region: string;
  holdsRegions(regions: readonly string[]): boolean;
  where(regions: readonly string[]): RegionEndpoint[];
}

export class CatalogService {
  private readonly cache = new Map<string, { ref: IndexRef | undefined; until: number }>();
  /** Bumped by every invalidation, so a lookup that read the rows before it cannot cache what it read. */
  private generation = 0;

  private readonly db: Db;
  /** Request-path lookups: the region's read replica first (store/lookup.ts). */
  private readonly lookup: Lookup;
  /** The active versions this process set (setActive), which a lagging read replica may not have yet. */
  private readonly activeHere = new Map<string, string>();
  private readonly engine: SearchEngine;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly quotas: CatalogQuotas;
  /** With replication: the active version this node serves, which may trail the store's. */
  private localActive: ((indexId: string) => string | undefined) | undefined;
  private localDropped: ((indexId: string) => boolean) | undefined;
  /** Visibilities set lately (VISIBILITY_HELD_MS), here or on another node, with when (the setter's clock). */
  private readonly visibilitySet = new Map<string, { visibility: Visibility; at: number }>();
  private notices: NodeNotices = noNotices;
  /** With replication: which indexes this node holds; without, every one. */
  private placement: IndexPlacement | undefined;
  /**
   * How long an index's creation or deletion waits for each of its store steps (D-360): those
   * calls also wait on the engine, which with replication is the change log, so they are bounded
   * step by step rather than whole. Unbounded without.
   */
  private readonly storeWaitMs: number | undefined;

  constructor(
    db: Db,
    engine: SearchEngine,
    log: Logger,
    now: () => number = Date.now,
    quotas: CatalogQuotas = DEFAULT_CATALOG_QUOTAS,
    lookup: Lookup = primaryOnly(db),
    storeWaitMs?: number,
  ) {
    this.storeWaitMs = storeWaitMs;
    this.db = db;
    this.lookup = lookup;
    this.engine = engine;
    this.log = log;
    this.now = now;
    this.quotas = quotas;
  }

  usePlacement(placement: IndexPlacement): void {
    this.placement = placement;
  }

  /**
   * Refuses (421) an index this node does not hold: its records are in its service's regions
   * only. Called once the caller may reach the index, before anything reads or writes it.
   */
  servedHere<T extends Pick<IndexRef, "name" | "serviceName" | "regions">>(ref: T): T {
    const there = this.heldElsewhere(ref);
    if (there === undefined) return ref;
    const named = there.map((r) => (r.url === undefined ? r.id : `${r.id} (${r.url})`)).join(", ");
    throw new MisdirectedError(
      `index "${ref.name}" of service "${ref.serviceName}" is held in ${named}, not in ${this.placement!.region}: ask one of those regions`,
      there,
    );
  }

  /** With placement, when this node's region does not hold the index: the regions that do. */
  heldElsewhere(ref: Pick<IndexRef, "regions">): RegionEndpoint[] | undefined {
    const placement = this.placement;
    return placement === undefined || placement.holdsRegions(ref.regions) ? undefined : placement.where(ref.regions);
  }

  /** With replication: the version this node serves, and whether it has applied the index's drop. */
  useLocalActive(fn: (indexId: string) => string | undefined, dropped?: (indexId: string) => boolean): void {
    this.localActive = fn;
    this.localDropped = dropped;
  }

  /** Tells the other nodes of each change to an index's row made here, and heeds theirs. */
  useNotices(notices: NodeNotices): void {
    this.notices = notices;
    notices.listen((notice) => {
      if (notice.kind === "index-changed") this.heed(notice);
    });
    // Hearing again, after notices may have been lost: what was cached is looked up again (D-347).
    notices.watchHearing?.((hearing) => {
      if (hearing) this.invalidate();
    });
  }

  /** An index row changed, here or on another node: the visibility it set wins for a while, cached lookups go. */
  private heed(notice: IndexChanged): void {
    if (notice.visibility !== undefined) this.holdVisibility(notice.indexId, notice.visibility, notice.at ?? 0);
    this.invalidate();
  }

  /** The newest visibility set wins, whichever node's notice comes last. */
  private holdVisibility(indexId: string, visibility: Visibility, at: number): void {
    const held = this.visibilitySet.get(indexId);
    if (held === undefined || held.at <= at) this.visibilitySet.set(indexId, { visibility, at });
    // Those past their time go once a few have gathered (a lookup drops its own too).
    if (this.visibilitySet.size > 1_000) {
      for (const [id, set] of this.visibilitySet) {
        if (this.now() - set.at >= VISIBILITY_HELD_MS) this.visibilitySet.delete(id);
      }
    }
  }

  /** An index row changed here: this node's cache, and every other node's. */
  private changed(change: Omit<IndexChanged, "kind">): void {
    const notice: IndexChanged = { kind: "index-changed", ...change };
    this.heed(notice);
    this.notices.send(notice);
  }

  // ---- services ----

  async createService(
    tenantId: string,
    input: { name: string; regions?: string[]; replicas?: number },
  ): Promise<SiftService> {
    const regions = input.regions ? [...new Set(input.regions)] : [...REGION_IDS];
    const unknown = regions.filter((r) => !isRegionId(r));
    if (unknown.length) {
      throw new InvalidArgumentError(`unknown region ${unknown.join(", ")}`, [
        { field: "regions", message: `must be among ${REGION_IDS.join(", ")}` },
      ]);
    }
    const row = {
      id: newId("svc"),
      tenantId,
      name: input.name,
      regions,
      replicas: input.replicas ?? 1,
      createdAt: this.now(),
    };
    try {
      await this.db.insert(services).values(row);
    } catch (error) {
      if (isUniqueViolation(error))
        throw new ConflictError(`the service name "${input.name}" is taken: service names are unique across Sift`);
      throw error;
    }
    return toService(row);
  }

  async listServices(tenantId: string): Promise<SiftService[]> {
    const rows = await this.db
      .select()
      .from(services)
      .where(eq(services.tenantId, tenantId))
      .orderBy(asc(services.name));
    return rows.map(toService);
  }

  async getService(tenantId: string, name: string): Promise<SiftService> {
    return toService(await this.serviceRow(tenantId, name));
  }

  async deleteService(tenantId: string, name: string): Promise<void> {
    const row = await this.serviceRow(tenantId, name);
    const [held] = await this.db.select({ n: count() }).from(indexes).where(eq(indexes.serviceId, row.id));
    if ((held?.n ?? 0) > 0)
      throw new ConflictError(`service "${name}" still holds ${held!.n} index(es): delete them first`);
    try {
      await this.db.delete(services).where(eq(services.id, row.id));
    } catch (error) {
      // An index created in it since the count: the store refuses the delete (ON DELETE RESTRICT).
      if (isForeignKeyViolation(error))
        throw new ConflictError(`service "${name}" still holds an index: delete its indexes first`);
      throw error;
    }
  }

  private async serviceRow(tenantId: string, name: string) {
    const [row] = await this.db
      .select()
      .from(services)
      .where(and(eq(services.tenantId, tenantId), eq(services.name, name)))
      .limit(1);
    if (!row) throw new NotFoundError(`service "${name}" does not exist`);
    return row;
  }

  // ---- indexes ----

  /** Creates the index with an empty version 0, so record writes have a base from the start. */
  async createIndex(
    tenantId: string,
    input: { name: string; serviceName: string; visibility?: Visibility },
  ): Promise<SiftIndex> {
    const service = await storeStep(this.storeWaitMs, false, this.serviceRow(tenantId, input.serviceName));
    // Checked before the write, so two creates at once may both pass at the limit: the quota
    // bounds what one tenant can pile up (every index costs the retention pass), not to the unit.
    const [owned] = await storeStep(
      this.storeWaitMs,
      false,
      this.db.select({ n: count() }).from(indexes).where(eq(indexes.tenantId, tenantId)),
    );
    if ((owned?.n ?? 0) >= this.quotas.indexes) {
      throw new QuotaExceededError(
        "indexes",
        this.quotas.indexes,
        `the tenant already has ${owned!.n} indexes, its quota: delete one to create another`,
      );
    }
    const id = newId("idx");
    const now = this.now();
    const ref: IndexRef = {
      id,
      tenantId,
      name: input.name,
      serviceName: service.name,
      regions: service.regions,
      visibility: input.visibility ?? "PRIVATE",
      activeVersion: "0",
      createdAt: now,
    };
    await this.engine.createIndex(id);
    let recorded: Promise<void> | undefined;
    try {
      const writer = await this.engine.bulkWriter(id, 0);
      await writer.commit();
      recorded = this.db.transaction(async (tx) => {
        await tx.insert(indexes).values({
          id,
          tenantId,
          serviceId: service.id,
          name: input.name,
          visibility: ref.visibility,
          activeVersion: "0",
          nextMajor: 1,
          createdAt: now,
        });
        await tx.insert(versions).values({
          indexId: id,
          version: "0",
          major: 0,
          minor: 0,
          parent: null,
          kind: "bulk",
          state: "ready",
          records: 0,
          createdAt: now,
        });
      });
      await storeStep(this.storeWaitMs, true, recorded);
    } catch (error) {
      if (error instanceof StoreCallTimedOut && recorded !== undefined) {
        // The store's answer, when it comes, decides: the index is there, or its engine side goes.
        void recorded.then(
          () => this.changed({ indexId: id }),
          () => this.dropUncreated(id),
        );
        throw error;
      }
      await this.dropUncreated(id);
      if (isUniqueViolation(error)) {
        // The name exists (maybe created by another process): drop a cached miss that says otherwise.
        this.invalidate();
        throw new ConflictError(`an index named "${input.name}" already exists in this tenant`);
      }
      // The service deleted since it was looked up (deleting takes no lock a create waits for).
      if (isForeignKeyViolation(error)) throw new NotFoundError(`service "${input.serviceName}" does not exist`);
      throw error;
    }
    // A lookup before the create may have cached a miss for this name (or a ref to an index of
    // the same name deleted by another process): without this, reads and writes would not find
    // the new index until the entry expired, here or on another node.
    this.changed({ indexId: id });
    // Described from what was just written, not looked up again: the row is known, and a lookup
    // here once met the stale miss and failed the create after it had succeeded.
    return this.describe(ref);
  }

  /** Every index of the tenant; with replication, those held elsewhere with `heldIn` (D-386). */
  async listIndexes(tenantId: string): Promise<SiftIndex[]> {
    const rows = await this.refs(eq(indexes.tenantId, tenantId));
    // One deleted since the rows were read is left out, as a list read a moment later would.
    const described = await Promise.all(
      rows.map((r) =>
        this.describe(r, { unservedFromStore: true }).catch((error) => {
          if (error instanceof NotFoundError) return undefined;
          throw error;
        }),
      ),
    );
    return described.filter((index) => index !== undefined);
  }

  async getIndex(tenantId: string, name: string): Promise<SiftIndex> {
    const ref = await this.byName(tenantId, name);
    if (!ref) throw new NotFoundError(`index "${name}" does not exist`);
    return this.describe(ref);
  }

  async updateIndex(tenantId: string, name: string, input: { visibility?: Visibility }): Promise<SiftIndex> {
    const ref = await this.byName(tenantId, name);
    if (!ref) throw new NotFoundError(`index "${name}" does not exist`);
    if (input.visibility) {
      await this.db.update(indexes).set({ visibility: input.visibility }).where(eq(indexes.id, ref.id));
      this.changed({ indexId: ref.id, visibility: input.visibility, at: this.now() });
    }
    // Deleted meanwhile (deleting takes no lock an update waits for): gone, not a server fault.
    const updated = await this.byName(tenantId, name);
    if (!updated) throw new NotFoundError(`index "${name}" does not exist`);
    return this.describe(updated);
  }

  async deleteIndex(tenantId: string, name: string): Promise<IndexRef> {
    const ref = await this.byName(tenantId, name);
    if (!ref) throw new NotFoundError(`index "${name}" does not exist`);
    const deleted = Promise.resolve(this.db.delete(indexes).where(eq(indexes.id, ref.id)));
    try {
      await storeStep(this.storeWaitMs, true, deleted);
    } catch (error) {
      // The row goes when the store answers: then its engine side too, as below.
      if (error instanceof StoreCallTimedOut)
        void deleted
          .then(() => this.forgetDeleted(ref.id))
          .catch((late: Error) =>
            this.log.warn("an index's deletion answered late did not finish; the store or the engine refused it", {
              index: ref.id,
              error: late.message,
            }),
          );
      throw error;
    }
    await this.forgetDeleted(ref.id);
    return ref;
  }

  /** An index whose row the store deleted: every node's caches, and its engine side. */
  private async forgetDeleted(indexId: string): Promise<void> {
    this.changed({ indexId });
    await this.engine.dropIndex(indexId);
  }

  /** The caller gets the error that matters; a leftover engine index is unreachable (no row names it). */
  private async dropUncreated(indexId: string): Promise<void> {
    await this.engine.dropIndex(indexId).catch((dropError: Error) =>
      this.log.warn("could not drop the engine index of an index that was not created", {
        index: indexId,
        error: dropError.message,
      }),
    );
  }

  /** The index a record path or an upload names: names are unique per tenant. */
  async byName(tenantId: string, name: string): Promise<IndexRef | undefined> {
    return this.cached(`t:${tenantId}:${name}`, () =>
      this.lookupRef(and(eq(indexes.tenantId, tenantId), eq(indexes.name, name))),
    );
  }

  /** The index a search names: service names are global, so this needs no tenant. */
  async byServiceAndName(serviceName: string, name: string): Promise<IndexRef | undefined> {
    return this.cached(`s:${serviceName}:${name}`, () =>
      this.lookupRef(and(eq(services.name, serviceName), eq(indexes.name, name))),
    );
  }

  async byId(id: string): Promise<IndexRef | undefined> {
    return this.refs(eq(indexes.id, id)).then((r) => r[0]);
  }

  /** Called after a change to an index row (creation, visibility, deletion). */
  invalidate(): void {
    this.generation++;
    this.cache.clear();
  }

  /**
   * One index through the request-path lookup. A read replica may trail this process's own
   * activations: the version this process made live wins over the one the replica has (D-275), and
   * so does a visibility set lately, here or on another node (D-343).
   */
  private async lookupRef(where: ReturnType<typeof and>): Promise<IndexRef | undefined> {
    const ref = await this.lookup((db) => this.refs(where, db).then((r) => r[0]));
    if (ref === undefined) return undefined;
    const mine = this.activeHere.get(ref.id);
    const set = this.visibilitySet.get(ref.id);
    const held = set !== undefined && this.now() - set.at < VISIBILITY_HELD_MS;
    if (set !== undefined && !held) this.visibilitySet.delete(ref.id);
    return {
      ...ref,
      ...(mine !== undefined ? { activeVersion: mine } : {}),
      ...(held ? { visibility: set.visibility } : {}),
    };
  }

  /** Keeps cached refs in step with a new active version, so the next search reads it at once. */
  setActive(indexId: string, version: string): void {
    this.activeHere.set(indexId, version);
    for (const entry of this.cache.values()) {
      if (entry.ref?.id === indexId) entry.ref.activeVersion = version;
    }
  }

  private async cached(key: string, load: () => Promise<IndexRef | undefined>): Promise<IndexRef | undefined> {
    const hit = this.cache.get(key);
    const now = this.now();
    if (hit && hit.until > now) return hit.ref;
    const generation = this.generation;
    let ref: IndexRef | undefined;
    try {
      ref = await load();
    } catch (error) {
      // The store is unreachable: searches go on with what was looked up before, for a while
      // (docs/replication.md); /readyz says the store is down meanwhile. Without such a lookup
      // the error goes on, and is a 503 (http/problem.ts).
      if (!hit || now - hit.until >= STALE_IF_ERROR_MS || !isStoreUnreachable(error)) throw error;
      this.log.warn("the store did not answer; using a cached index lookup", { error: (error as Error).message });
      return hit.ref;
    }
    // An invalidation during the load may mean the rows changed after they were read: answer
    // what was read, but do not keep it.
    if (generation === this.generation) this.cache.set(key, { ref, until: now + CACHE_TTL_MS });
    return ref;
  }

  private async refs(where: ReturnType<typeof eq> | undefined, db: Db = this.db): Promise<IndexRef[]> {
    const rows = await db
      .select({
        id: indexes.id,
        tenantId: indexes.tenantId,
        name: indexes.name,
        serviceName: services.name,
        regions: services.regions,
        visibility: indexes.visibility,
        activeVersion: indexes.activeVersion,
        createdAt: indexes.createdAt,
      })
      .from(indexes)
      .innerJoin(services, eq(services.id, indexes.serviceId))
      .where(where)
      .orderBy(asc(indexes.name));
    return rows;
  }

  private async describe(ref: IndexRef, options: { unservedFromStore?: boolean } = {}): Promise<SiftIndex> {
    // Held in other regions: its description is the shared store's, the same everywhere.
    const heldIn = this.heldElsewhere(ref);
    if (heldIn !== undefined) return { ...(await this.describeFromStore(ref)), heldIn };
    // With replication, what this node serves; an index it has not received yet is 503.
    const active = this.localActive ? this.localActive(ref.id) : ref.activeVersion;
    // Dropped here while another region deleted it: a lookup cached before that is gone too.
    if (active === undefined && this.localDropped?.(ref.id)) {
      throw new NotFoundError(`index "${ref.name}" does not exist`);
    }
    if (active === undefined) {
      // In a list, one index this node cannot serve (not received yet, or set aside) is described
      // as the shared store knows it, instead of failing the whole list.
      if (options.unservedFromStore) return this.describeFromStore(ref);
      throw notInThisRegionYet();
    }
    return {
      name: ref.name,
      serviceName: ref.serviceName,
      visibility: ref.visibility,
      activeVersion: active,
      // Deleting takes no lock a read waits for: the engine's index may be dropped meanwhile.
      records: await this.engine.count(ref.id, active).catch((error) => rethrowUnlessDeleted(this.db, ref.id, error)),
      createdAt: ref.createdAt,
    };
  }

  private async describeFromStore(ref: IndexRef): Promise<SiftIndex> {
    // The count of the newest version up to the active one that has its count: with replication
    // nodes record the active version and the version rows side by side, and a checkpoint's row
    // gets its count once built, while its records are those of the version it was made from.
    const { major, minor } = parseVersion(ref.activeVersion);
    const [row] = await this.db
      .select({ records: versions.records })
      .from(versions)
      .where(
        and(
          eq(versions.indexId, ref.id),
          isNotNull(versions.records),
          ne(versions.state, "failed"),
          sql`(${versions.major}, ${versions.minor}) <= (${major}, ${minor})`,
        ),
      )
      .orderBy(desc(versions.major), desc(versions.minor))
      .limit(1);
    return {
      name: ref.name,
      serviceName: ref.serviceName,
      visibility: ref.visibility,
      activeVersion: ref.activeVersion,
      // A new index's version 0 has no row: empty.
      records: row?.records ?? 0,
      createdAt: ref.createdAt,
    };
  }
}

const toService = (row: typeof services.$inferSelect): SiftService => ({
  name: row.name,
  regions: row.regions,
  replicas: row.replicas,
  createdAt: row.createdAt,
});
