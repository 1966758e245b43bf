// Index versions (docs/versions.md). The engine holds the data; this service holds the version
// graph. Each concern lives in versions/: the per-index write lock, record changes, coalesce,
// bulk uploads, retention and start-up reconciliation; this facade wires them to one context
// and answers the reads (resolve, list) and activation.
import { and, desc, eq, ne } from "drizzle-orm";
import type { components } from "@sift/contract";
import { ConflictError, InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import { formatVersion, tryParseVersion, type VersionId } from "../domain/version-id.ts";
import type { Logger } from "../log.ts";
import type { SearchEngine, SearchRecord } from "../ports/engine.ts";
import type { Db } from "../store/open.ts";
import { versions } from "../store/schema.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";
import { type BulkActivation, failBulk, finishBulk } from "./versions/bulk.ts";
import { applyRecordChange } from "./versions/changes.ts";
import { coalesce } from "./versions/coalesce.ts";
import { versionChanges } from "./versions/diff.ts";
import {
  type ReplicaView,
  setActive,
  storeSettled,
  type VersionContext,
  type VersionPolicy,
} from "./versions/context.ts";
import { IndexLocks } from "./versions/lock.ts";
import { purgeRecord } from "./versions/purge.ts";
import { reconcile } from "./versions/reconcile.ts";
import { applyRetention, applyRetentionEverywhere, retainAfterNewMajor } from "./versions/retention.ts";
import { activeVersionOf, liveVersion, takeMajor, versionRow } from "./versions/rows.ts";
import { boundedWrite, type WriteDeadline } from "./versions/write-deadline.ts";
import { WriteGate } from "./versions/write-gate.ts";

export type { VersionPolicy } from "./versions/context.ts";

type IndexVersion = components["schemas"]["IndexVersion"];
type VersionChanges = components["schemas"]["VersionChanges"];

/** How long a read waits for this node to apply the version it names (then 503). */
const MIN_VERSION_WAIT_MS = 2_000;

export class VersionService {
  private readonly ctx: VersionContext;
  private readonly gate: WriteGate | undefined;
  private readonly writeWaitMs: number | undefined;
  /**
   * Indexes whose versions changed since the periodic retention pass last visited them; undefined
   * until the first pass has visited every index. An idle pass then reads nothing: with 10,000
   * indexes each pass used to read every index's versions (issue 15, finding 4).
   */
  private retentionDue: Set<string> | undefined;
  private retentionPass: Promise<number> | undefined;

  constructor(deps: {
    db: Db;
    engine: SearchEngine;
    catalog: Pick<CatalogService, "setActive">;
    policy: VersionPolicy;
    log: Logger;
    now?: () => number;
    /** Shared with the replica, which applies other nodes' entries under the same locks. */
    locks?: IndexLocks;
    replica?: ReplicaView;
    /**
     * How long a record write's client waits for the store: set on one process over PostgreSQL,
     * which may hang (D-356). With replication a write needs the store only for its lookups
     * (D-295), which are bounded already (D-350); PGlite is in process.
     */
    writeWaitMs?: number;
  }) {
    this.writeWaitMs = deps.writeWaitMs;
    this.ctx = {
      ...deps,
      now: deps.now ?? Date.now,
      locks: deps.locks ?? new IndexLocks(),
      autoCoalescing: new Set(),
    };
    const perTenant = deps.policy.writesPerTenant;
    this.gate = perTenant === undefined ? undefined : new WriteGate(perTenant);
  }

  /**
   * The version a read should use: the one asked for (if retained and ready) or the active one.
   * `minVersion` (docs/replication.md, Read your writes) is the version a write returned: a node
   * that has not applied it yet waits up to 2 s for it, then answers 503 so the client asks
   * another region. On a single node every acknowledged version is applied already.
   */
  async resolve(ref: IndexRef, requested: string | undefined, minVersion?: string): Promise<VersionId> {
    const replica = this.ctx.replica;
    // The contract's pattern lets "007" and "7.0" through; no write returns them. Refused alike
    // with or without replication (one process would otherwise ignore what the others choke on).
    if (minVersion !== undefined && tryParseVersion(minVersion) === null)
      throw InvalidArgumentError.field(
        "minVersion",
        `"${minVersion}" is not a version a write returns, such as "7" or "7.3"`,
      );
    if (minVersion !== undefined && replica) await replica.waitFor(ref.id, minVersion, MIN_VERSION_WAIT_MS);
    if (requested === undefined) return replica ? liveVersion(this.ctx, ref.id) : ref.activeVersion;
    let row = await versionRow(this.ctx.db, ref.id, requested);
    // A version this node answered or applied a moment ago may not be in the store yet (D-295).
    if (row?.state !== "ready" && replica) {
      await storeSettled(this.ctx, ref.id);
      row = await versionRow(this.ctx.db, ref.id, requested);
    }
    if (row?.state !== "ready") {
      throw new NotFoundError(`version ${requested} of index "${ref.name}" does not exist or is no longer retained`);
    }
    if (replica && !replica.has(ref.id, requested)) await replica.waitFor(ref.id, requested, MIN_VERSION_WAIT_MS);
    return requested;
  }

  async list(ref: IndexRef): Promise<IndexVersion[]> {
    const { db, engine, log } = this.ctx;
    await storeSettled(this.ctx, ref.id);
    const rows = await db
      .select()
      .from(versions)
      .where(and(eq(versions.indexId, ref.id), ne(versions.state, "dropped")))
      .orderBy(desc(versions.createdAt), desc(versions.major), desc(versions.minor));
    const active = await activeVersionOf(db, ref.id);
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
        if (r.kind === "purge" && r.purgedRecordId !== null && r.purgedBy !== null) {
          v.purge = { recordId: r.purgedRecordId, by: r.purgedBy };
        }
        // Stored with each version; versions recorded before counts were stored are counted by the
        // engine. `records` is optional in a listing: a count the engine cannot give must not fail it.
        const records =
          r.state === "ready" && (r.records === null || r.records === undefined)
            ? await engine.count(ref.id, r.version).catch((error: Error) => {
                log.warn("could not count the records of a version", {
                  index: ref.id,
                  version: r.version,
                  error: error.message,
                });
                return undefined;
              })
            : r.records;
        if (records !== undefined && records !== null) v.records = records;
        return v;
      }),
    );
  }

  /** What a retained version changed, one page of ids at a time (versions/diff.ts). */
  changes(
    ref: IndexRef,
    version: VersionId,
    page: { after?: string | undefined; limit: number },
  ): Promise<VersionChanges> {
    return versionChanges(this.ctx, ref, version, page);
  }

  /**
   * Asked over HTTP: with replication, a node that cannot follow the log answers 503 after the
   * bound a record write has rather than holding the client (D-320); an upload's activation,
   * which nobody waits on, waits as long as it takes (versions/bulk.ts).
   */
  activate(ref: IndexRef, version: VersionId): Promise<VersionId> {
    this.retentionDue?.add(ref.id);
    const activation = async () => {
      await storeSettled(this.ctx, ref.id);
      const row = await versionRow(this.ctx.db, ref.id, version);
      if (!row || row.state === "dropped") {
        throw new NotFoundError(`version ${version} of index "${ref.name}" does not exist or is no longer retained`);
      }
      if (row.state !== "ready")
        throw new ConflictError(`version ${version} is ${row.state}: only a ready version can be activated`);
      await setActive(this.ctx, ref.id, version, { clientWaits: true });
      return version;
    };
    return this.ctx.locks.run(ref.id, activation, { clientWaits: true });
  }

  /** A record change on top of the active version, made active (versions/changes.ts). */
  applyRecordChange(ref: IndexRef, change: { upserts?: SearchRecord[]; deletes?: string[] }): Promise<VersionId> {
    this.retentionDue?.add(ref.id);
    return this.clientWrite(ref, (deadline) => {
      // Its turn came after its client was answered (D-356).
      deadline?.check();
      return applyRecordChange(this.ctx, ref, change, deadline);
    });
  }

  /** Erases a record from every retained version, audited as a `purge` version (versions/purge.ts). */
  purge(ref: IndexRef, recordId: string, by: string): Promise<VersionId> {
    this.retentionDue?.add(ref.id);
    return this.clientWrite(ref, (deadline) => purgeRecord(this.ctx, ref, recordId, by, deadline));
  }

  /**
   * A write a client sent: in the tenant's write slots (WriteGate), and bounded on a store that
   * may hang (`writeWaitMs`, D-356), `run` getting the deadline it must respect.
   */
  private clientWrite<T>(ref: IndexRef, run: (deadline?: WriteDeadline) => Promise<T>): Promise<T> {
    const write = (deadline?: WriteDeadline) =>
      this.gate ? this.gate.run(ref.tenantId, () => run(deadline)) : run(deadline);
    const ms = this.writeWaitMs;
    return ms === undefined ? write() : boundedWrite(ms, write);
  }

  /** Checkpoints the active version into the next major (versions/coalesce.ts), asked over HTTP. */
  async coalesce(ref: IndexRef): Promise<VersionId> {
    const version = await coalesce(this.ctx, ref, { clientWaits: true });
    // With replication, retention's entry waits for this node as nothing a client waits on
    // does (up to 120 s): it runs after the answer (D-346). Alone it is local, and done first.
    const retained = retainAfterNewMajor(this.ctx, ref.id);
    if (!this.ctx.replica) await retained;
    return version;
  }

  /** Draws the next major id: sequential per index, shared by bulk uploads and checkpoints. */
  takeMajor(indexId: string): Promise<number> {
    return takeMajor(this.ctx.db, indexId);
  }

  /** Makes a committed bulk version ready and maybe active (versions/bulk.ts). */
  async finishBulk(
    ref: IndexRef,
    major: number,
    options: { records?: number; activate: BulkActivation; startedAt: number },
  ): Promise<VersionId> {
    const live = await finishBulk(this.ctx, ref, major, options);
    await retainAfterNewMajor(this.ctx, ref.id);
    return live;
  }

  /**
   * Whether an upload's major was recorded by an ingest that was cut off: its version made ready,
   * or with replication its bulk entry in the log (applied here once this node has caught up). Such
   * an ingest is finished with finishBulk, not run again (D-324). Rejects when the log does not
   * say (unreachable, or this node too far behind to tell in a client's wait).
   */
  async bulkRecorded(indexId: string, major: number): Promise<boolean> {
    const row = await versionRow(this.ctx.db, indexId, formatVersion(major));
    if (row?.state !== "pending") return row?.state === "ready";
    if (!this.ctx.replica) return false;
    await this.ctx.replica.catchUp({ clientWaits: true });
    return this.ctx.replica.has(indexId, formatVersion(major));
  }

  failBulk(indexId: string, major: number): Promise<void> {
    this.retentionDue?.add(indexId);
    return failBulk(this.ctx, indexId, major);
  }

  /** Drops what retention does not keep (versions/retention.ts); returns the dropped versions. */
  applyRetention(indexId: string): Promise<VersionId[]> {
    return applyRetention(this.ctx, indexId);
  }

  /**
   * The periodic pass: every index the first time, then only indexes whose versions changed
   * since (a new major is retained at once, see finishBulk). A pass still running when the next
   * is due is not doubled. Resolves with the number of indexes visited.
   */
  applyRetentionEverywhere(): Promise<number> {
    this.retentionPass ??= this.retentionDuePass().finally(() => {
      this.retentionPass = undefined;
    });
    return this.retentionPass;
  }

  private async retentionDuePass(): Promise<number> {
    if (this.retentionDue === undefined) {
      // Changes made while this first pass runs are recorded for the next one.
      this.retentionDue = new Set();
      return applyRetentionEverywhere(this.ctx);
    }
    const due = [...this.retentionDue];
    this.retentionDue.clear();
    for (const id of due) {
      await applyRetention(this.ctx, id).catch((error: Error) => {
        // An index deleted since it was written has nothing left to retain.
        if (error instanceof NotFoundError) return;
        this.ctx.log.error("retention failed", { index: id, error: error.message });
        this.retentionDue?.add(id);
      });
    }
    return due.length;
  }

  /** Records changes the engine kept but the store missed before a crash (versions/reconcile.ts). */
  reconcile(): Promise<void> {
    return reconcile(this.ctx);
  }
}
