// Index versions (DESIGN.md, Versions). Writes to one index are serialised by an in-process lock;
// each record change becomes `<major of active>.<next minor>` and is made active in the same step,
// so the next search sees it. The engine holds the data; this service holds the version graph.
import { and, desc, eq, gt, inArray, max, ne, sql } from "drizzle-orm";
import type { components } from "../../../generated/types.ts";
import { ConflictError, NotFoundError } from "../domain/errors.ts";
import { formatVersion, isMajorVersion, majorOf, minorOf } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import type { SearchEngine, SearchRecord } from "../ports/engine.ts";
import type { Db } from "../store/open.ts";
import { indexes, tombstones, versions } from "../store/schema.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";

type IndexVersion = components["schemas"]["IndexVersion"];
type VersionRow = typeof versions.$inferSelect;


export interface VersionPolicy {
  /** A major that has accumulated this many record changes is checkpointed automatically. */
  coalesceAfter: number;
  /** Newest versions kept besides the active one and what it is built on. */
  retainVersions: number;
}

export class VersionService {
  private readonly db: Db;
  private readonly engine: SearchEngine;
  private readonly catalog: CatalogService;
  private readonly policy: VersionPolicy;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(deps: { db: Db; engine: SearchEngine; catalog: CatalogService; policy: VersionPolicy; log: Logger; now?: () => number }) {
    this.db = deps.db;
    this.engine = deps.engine;
    this.catalog = deps.catalog;
    this.policy = deps.policy;
    this.log = deps.log;
    this.now = deps.now ?? Date.now;
  }

  /** Runs `fn` after every earlier write to the same index has finished. */
  withIndexLock<T>(indexId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(indexId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => {});
    this.locks.set(indexId, tail);
    void tail.then(() => {
      if (this.locks.get(indexId) === tail) this.locks.delete(indexId);
    });
    return run;
  }

  /** The version a read should use: the one asked for (if retained and ready) or the active one. */
  async resolve(ref: IndexRef, requested: string | undefined): Promise<string> {
    if (requested === undefined) return ref.activeVersion;
    const row = await this.row(ref.id, requested);
    if (!row || row.state !== "ready") {
      throw new NotFoundError(`version ${requested} of index "${ref.name}" does not exist or is no longer retained`);
    }
    return requested;
  }

  async list(ref: IndexRef): Promise<IndexVersion[]> {
    const rows = await this.db
      .select()
      .from(versions)
      .where(and(eq(versions.indexId, ref.id), ne(versions.state, "dropped")))
      .orderBy(desc(versions.createdAt), desc(versions.major), desc(versions.minor));
    const active = await this.activeVersion(ref.id);
    return Promise.all(
      rows.map(async (r) => {
        const v: IndexVersion = {
          version: r.version,
          major: r.major,
          minor: r.minor,
          parent: r.parent,
          kind: r.kind,
          state: r.state as IndexVersion["state"],
          active: r.version === active,
          createdAt: r.createdAt,
        };
        const records = r.state === "ready" ? await this.engine.count(ref.id, r.version).catch(() => undefined) : r.records;
        if (records !== undefined && records !== null) v.records = records;
        return v;
      }),
    );
  }

  async activate(ref: IndexRef, version: string): Promise<string> {
    return this.withIndexLock(ref.id, async () => {
      const row = await this.row(ref.id, version);
      if (!row || row.state === "dropped") throw new NotFoundError(`version ${version} of index "${ref.name}" does not exist or is no longer retained`);
      if (row.state !== "ready") throw new ConflictError(`version ${version} is ${row.state}: only a ready version can be activated`);
      await this.setActive(ref.id, version);
      return version;
    });
  }

  /**
   * Applies one record change on top of the active version and makes the result active.
   * Resolves once the engine has made the change durable and the store points at it.
   */
  async applyRecordChange(ref: IndexRef, change: { upserts?: SearchRecord[]; deletes?: string[] }): Promise<string> {
    const version = await this.withIndexLock(ref.id, async () => {
      const parent = await this.activeVersion(ref.id);
      // Checked under the lock: two concurrent deletes of one record must not both succeed.
      for (const id of change.deletes ?? []) {
        if (!(await this.engine.get(ref.id, parent, id))) {
          throw new NotFoundError(`record "${id}" does not exist in the active version of index "${ref.name}"`);
        }
      }
      const major = majorOf(parent);
      const [last] = await this.db
        .select({ minor: max(versions.minor) })
        .from(versions)
        .where(and(eq(versions.indexId, ref.id), eq(versions.major, major)));
      const version = formatVersion(major, (last?.minor ?? 0) + 1);
      const upserts = change.upserts ?? [];
      const deletes = [...(change.deletes ?? []), ...(await this.tombstonesToCarry(ref.id, parent, upserts))];

      await this.engine.applyChange(ref.id, { version, parent, upserts, deletes });
      const now = this.now();
      await this.db.transaction(async (tx) => {
        await tx.insert(versions).values({
          indexId: ref.id,
          version,
          major,
          minor: minorOf(version),
          parent,
          kind: "change",
          state: "ready",
          createdAt: now,
        });
        await tx.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, ref.id));
        const rewritten = upserts.map((r) => r.id);
        if (rewritten.length) {
          await tx.delete(tombstones).where(and(eq(tombstones.indexId, ref.id), inArray(tombstones.recordId, rewritten)));
        }
        for (const recordId of change.deletes ?? []) {
          await tx
            .insert(tombstones)
            .values({ indexId: ref.id, recordId, version, createdAt: now })
            .onConflictDoUpdate({ target: [tombstones.indexId, tombstones.recordId], set: { version, createdAt: now } });
        }
      });
      this.catalog.setActive(ref.id, version);
      return version;
    });
    if (minorOf(version) >= this.policy.coalesceAfter) {
      void this.coalesce(ref).catch((error: Error) =>
        this.log.error("automatic coalesce failed", { index: ref.id, error: error.message }),
      );
    }
    return version;
  }

  /**
   * A delete must outlive branching (DESIGN.md): when the parent was created before some delete
   * that happened elsewhere, the ids that delete removed but the parent still holds are deleted
   * again in the new version.
   */
  private async tombstonesToCarry(indexId: string, parent: string, upserts: SearchRecord[]): Promise<string[]> {
    const parentRow = await this.row(indexId, parent);
    if (!parentRow) return [];
    const newer = await this.db
      .select({ recordId: tombstones.recordId })
      .from(tombstones)
      .where(and(eq(tombstones.indexId, indexId), gt(tombstones.createdAt, parentRow.createdAt)));
    const rewritten = new Set(upserts.map((r) => r.id));
    const carried: string[] = [];
    for (const { recordId } of newer) {
      if (!rewritten.has(recordId) && (await this.engine.get(indexId, parent, recordId))) carried.push(recordId);
    }
    return carried;
  }

  /**
   * Writes the active version as a self-contained checkpoint with the next major id and makes it
   * active. With nothing accumulated (the active version is already a major) it changes nothing.
   */
  async coalesce(ref: IndexRef): Promise<string> {
    return this.withIndexLock(ref.id, async () => {
      const from = await this.activeVersion(ref.id);
      if (isMajorVersion(from)) return from;
      const major = await this.takeMajor(ref.id);
      const version = formatVersion(major);
      await this.db.insert(versions).values({
        indexId: ref.id,
        version,
        major,
        minor: 0,
        parent: from,
        kind: "checkpoint",
        state: "pending",
        createdAt: this.now(),
      });
      try {
        const { records } = await this.engine.checkpoint(ref.id, from, major);
        await this.db
          .update(versions)
          .set({ state: "ready", records })
          .where(and(eq(versions.indexId, ref.id), eq(versions.version, version)));
      } catch (error) {
        await this.db
          .update(versions)
          .set({ state: "failed" })
          .where(and(eq(versions.indexId, ref.id), eq(versions.version, version)));
        throw error;
      }
      await this.setActive(ref.id, version);
      this.log.info("coalesced", { index: ref.id, from, version });
      return version;
    });
  }

  /**
   * Makes a committed bulk version ready and (unless told not to) active. Ids deleted while the
   * ingest ran were not suppressed by it, so they are deleted in a follow-up change `<major>.1`,
   * which then becomes the version that goes live.
   */
  async finishBulk(ref: IndexRef, major: number, options: { records: number; activate: boolean; startedAt: number }): Promise<string> {
    return this.withIndexLock(ref.id, async () => {
      const base = formatVersion(major);
      await this.db
        .update(versions)
        .set({ state: "ready", records: options.records })
        .where(and(eq(versions.indexId, ref.id), eq(versions.version, base)));
      const late = await this.db
        .select({ recordId: tombstones.recordId })
        .from(tombstones)
        .where(and(eq(tombstones.indexId, ref.id), gt(tombstones.createdAt, options.startedAt)));
      const deletes: string[] = [];
      for (const { recordId } of late) if (await this.engine.get(ref.id, base, recordId)) deletes.push(recordId);
      let live = base;
      if (deletes.length) {
        live = formatVersion(major, 1);
        await this.engine.applyChange(ref.id, { version: live, parent: base, upserts: [], deletes });
        await this.db.insert(versions).values({
          indexId: ref.id,
          version: live,
          major,
          minor: 1,
          parent: base,
          kind: "change",
          state: "ready",
          createdAt: this.now(),
        });
      }
      if (options.activate) await this.setActive(ref.id, live);
      return live;
    });
  }

  async failBulk(indexId: string, major: number): Promise<void> {
    await this.db
      .update(versions)
      .set({ state: "failed" })
      .where(and(eq(versions.indexId, indexId), eq(versions.version, String(major))));
  }

  /** Draws the next major id: sequential per index, shared by bulk uploads and checkpoints. */
  async takeMajor(indexId: string): Promise<number> {
    const [row] = await this.db
      .update(indexes)
      .set({ nextMajor: sql`${indexes.nextMajor} + 1` })
      .where(eq(indexes.id, indexId))
      .returning({ major: sql<number>`${indexes.nextMajor} - 1` });
    if (!row) throw new NotFoundError("the index no longer exists");
    return Number(row.major);
  }

  async setActive(indexId: string, version: string): Promise<void> {
    await this.db.update(indexes).set({ activeVersion: version }).where(eq(indexes.id, indexId));
    await this.engine.activate(indexId, version);
    this.catalog.setActive(indexId, version);
  }

  async activeVersion(indexId: string): Promise<string> {
    const [row] = await this.db.select({ v: indexes.activeVersion }).from(indexes).where(eq(indexes.id, indexId));
    if (!row) throw new NotFoundError("the index no longer exists");
    return row.v;
  }

  async row(indexId: string, version: string): Promise<VersionRow | undefined> {
    const [row] = await this.db
      .select()
      .from(versions)
      .where(and(eq(versions.indexId, indexId), eq(versions.version, version)))
      .limit(1);
    return row;
  }

  /** Runs retention over every index; a failure on one index is logged and does not stop the rest. */
  async applyRetentionEverywhere(): Promise<void> {
    for (const { id } of await this.db.select({ id: indexes.id }).from(indexes)) {
      await this.applyRetention(id).catch((error: Error) =>
        this.log.error("retention failed", { index: id, error: error.message }),
      );
    }
  }

  /**
   * Brings the store in line with the engine after a crash. A change the engine made durable
   * but the store never recorded (the process died between the two) was never acknowledged:
   * it is recorded as a ready, inactive version so its id is never reused.
   */
  async reconcile(): Promise<void> {
    for (const { id } of await this.db.select({ id: indexes.id }).from(indexes)) {
      const known = new Set(
        (await this.db.select({ v: versions.version }).from(versions).where(eq(versions.indexId, id))).map((r) => r.v),
      );
      for (const v of await this.engine.versions(id)) {
        if (known.has(v.version) || isMajorVersion(v.version)) continue;
        await this.db.insert(versions).values({
          indexId: id,
          version: v.version,
          major: majorOf(v.version),
          minor: minorOf(v.version),
          parent: v.parent,
          kind: "change",
          state: "ready",
          records: v.records,
          createdAt: this.now(),
        });
        this.log.warn("recorded a version the engine kept but the store missed", { index: id, version: v.version });
      }
    }
  }

  /**
   * Retention: keeps the active version, the newest `retainVersions` ready versions, everything
   * those are built on (a minor needs its major and the minors between), and anything pending.
   * The rest is dropped from the engine and marked `dropped` (ids are never reused).
   */
  async applyRetention(indexId: string): Promise<string[]> {
    return this.withIndexLock(indexId, async () => {
      const rows = await this.db
        .select()
        .from(versions)
        .where(and(eq(versions.indexId, indexId), ne(versions.state, "dropped")))
        .orderBy(desc(versions.createdAt));
      const byVersion = new Map(rows.map((r) => [r.version, r]));
      const keep = new Set<string>();
      const keepWithBase = (version: string) => {
        for (let v: string | null | undefined = version; v && !keep.has(v); ) {
          keep.add(v);
          const row = byVersion.get(v);
          // A checkpoint's parent is provenance, not storage: the checkpoint is self-contained.
          v = row && row.minor > 0 ? row.parent : undefined;
        }
      };
      keepWithBase(await this.activeVersion(indexId));
      rows.filter((r) => r.state === "pending").forEach((r) => keep.add(r.version));
      rows
        .filter((r) => r.state === "ready")
        .slice(0, this.policy.retainVersions)
        .forEach((r) => keepWithBase(r.version));

      const keptMajors = new Set([...keep].map(majorOf));
      const dropped: string[] = [];
      for (const r of rows) {
        if (keep.has(r.version)) continue;
        // Dropping a major drops its minors with it, so only a major none of whose versions is kept.
        if (r.minor === 0 && keptMajors.has(r.major)) continue;
        if (r.state === "ready") await this.engine.dropVersion(indexId, r.version);
        await this.db
          .update(versions)
          .set({ state: "dropped" })
          .where(and(eq(versions.indexId, indexId), eq(versions.version, r.version)));
        dropped.push(r.version);
      }
      if (dropped.length) this.log.info("retention dropped versions", { index: indexId, dropped: dropped.length });
      return dropped;
    });
  }
}
