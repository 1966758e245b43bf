// The ingest job runner: works through queued uploads in two lanes, tenants taking turns (see
// claim()), streaming each file through the parser into a bulk writer. The main lane takes any
// upload; the small lane only small files, so they do not wait for a long ingest. State lives in
// the store, so a restart resumes: an ingest found `running` at start-up was cut off, and is
// queued again (or failed after 3 tries).
import { randomUUID } from "node:crypto";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Logger } from "../log.ts";
import { uploadBlobKey, type BlobStore } from "../ports/blobs.ts";
import type { BulkWriter, SearchEngine } from "../ports/engine.ts";
import type { CatalogService } from "../services/catalog.ts";
import { finishRecordedIngest } from "../services/uploads.ts";
import type { VersionService } from "../services/versions.ts";
import { unlessStoreUnreachable } from "../store/errors.ts";
import type { Db } from "../store/open.ts";
import { indexes, tombstones, uploads } from "../store/schema.ts";
import { openUpload, UploadLimitError, UploadParseError, type RecordError } from "./parse/index.ts";

type UploadRow = typeof uploads.$inferSelect;

const MAX_REPORTED_ERRORS = 100;
const MAX_ATTEMPTS = 3;
const PROGRESS_EVERY_MS = 500;
const IDLE_POLL_MS = 2_000;
const FAILURE_PAUSE_MS = 1_000;
const SERVER_SIDE_FAILURE =
  "the ingest failed on the server's side; upload the file again, and quote this version if it recurs";

/** What one upload may hold (docs/api.md, Limits). */
export interface UploadLimits {
  /** Bytes once decompressed. */
  expandedBytes: number;
  /** Records and invalid lines together. */
  records: number;
  /** Records written to the version (the tenant quota SIFT_QUOTA_RECORDS_PER_INDEX). */
  recordsPerIndex: number;
}
export const DEFAULT_UPLOAD_LIMITS: UploadLimits = {
  expandedBytes: 20 * 1024 ** 3,
  records: 25_000_000,
  recordsPerIndex: 25_000_000,
};

/**
 * What the small lane takes, and the most it lets a file make of itself. 100,000 small records
 * peaked 131 MB above idle through the bulk writer (10,000: 55 MB; 1,000,000: 518 MB), so a
 * small-lane ingest fits beside a main-lane one (767 MB at 19.4 million records, D-142) within
 * the 1 GB target. A file that passes these (a gzip that expands) goes back to the main lane.
 */
export const DEFAULT_SMALL_LANE = { storedBytes: 4 * 1024 ** 2, expandedBytes: 16 * 1024 ** 2, records: 100_000 };
export type SmallLane = typeof DEFAULT_SMALL_LANE;
type Lane = "main" | "small";

export class IngestRunner {
  private readonly db: Db;
  private readonly engine: SearchEngine;
  private readonly blobs: BlobStore;
  private readonly catalog: CatalogService;
  private readonly versions: VersionService;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly limits: UploadLimits;
  private readonly smallLane: SmallLane;
  private running = false;
  /** Whether the ingests a crash cut off have been looked for (recover). */
  private recovered = false;
  private turn = 0;
  /** The turn (a counter) in which each tenant last had an ingest claimed: least recent goes next. */
  private readonly served = new Map<string, number>();
  private readonly wakers = new Set<() => void>();
  private loops: Promise<void>[] = [];
  /** Uploads the small lane found larger than it takes: left to the main lane. */
  private readonly tooBigForSmallLane = new Set<string>();
  private readonly abort = new AbortController();
  private readonly node: string | undefined;

  constructor(deps: {
    db: Db;
    engine: SearchEngine;
    blobs: BlobStore;
    catalog: CatalogService;
    versions: VersionService;
    log: Logger;
    now?: () => number;
    limits?: Partial<UploadLimits>;
    smallLane?: Partial<SmallLane>;
    /** With replication: ingest only the uploads whose bytes this node holds. */
    node?: string;
  }) {
    this.node = deps.node;
    this.limits = { ...DEFAULT_UPLOAD_LIMITS, ...deps.limits };
    this.smallLane = { ...DEFAULT_SMALL_LANE, ...deps.smallLane };
    this.db = deps.db;
    this.engine = deps.engine;
    this.blobs = deps.blobs;
    this.catalog = deps.catalog;
    this.versions = deps.versions;
    this.log = deps.log.child({ component: "ingest" });
    this.now = deps.now ?? Date.now;
  }

  /**
   * Starts the lanes. Interrupted ingests are looked at by the main lane before its first claim,
   * not here: with replication, finishing one waits for the log, which must not hold up the
   * node's start (it replays the log in the background).
   */
  async start(): Promise<void> {
    this.running = true;
    this.loops = [this.run("main"), this.run("small")];
  }

  /**
   * recoverInterrupted, or, while the store does not answer (a node started on its read replica,
   * D-276) or another step fails, a warning: the main loop asks again until it is done.
   */
  private async recover(): Promise<void> {
    try {
      const done = await unlessStoreUnreachable(this.log, "look for interrupted ingests (tried again)", () =>
        this.recoverInterrupted(),
      );
      this.recovered = done === true;
    } catch (error) {
      this.log.warn("could not settle interrupted ingests (tried again)", { error: (error as Error).message });
    }
  }

  /** Called when an upload is queued, so it starts without waiting for the next poll. */
  notify(): void {
    for (const wake of this.wakers) wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.abort.abort(new Error("the server is shutting down"));
    this.notify();
    await Promise.all(this.loops);
  }

  /**
   * Ingests cut off by a crash or kill: finished when their version was recorded already (D-324),
   * else queued again, or failed after MAX_ATTEMPTS. False while one could not be told (the log
   * did not say): the main loop asks again.
   */
  private async recoverInterrupted(): Promise<boolean> {
    const stuck = await this.db
      .select()
      .from(uploads)
      .where(and(eq(uploads.state, "running"), this.mine()));
    let told = true;
    for (const row of stuck) {
      const recorded = await this.versions
        .bulkRecorded(row.indexId, Number(row.version))
        .catch((error: Error) =>
          this.log.warn("cannot tell yet how far an interrupted ingest got", { upload: row.id, error: error.message }),
        );
      if (recorded === undefined) {
        told = false;
      } else if (recorded) {
        await finishRecordedIngest({ db: this.db, catalog: this.catalog, versions: this.versions, now: this.now }, row);
        await this.blobs.delete(uploadBlobKey(row));
        this.log.warn("ingest interrupted after its version was recorded; finished", { upload: row.id });
      } else if (row.attempts >= MAX_ATTEMPTS) {
        await this.fail(row, `the server stopped during this ingest ${row.attempts} times; upload the file again`);
      } else {
        await this.requeue(row);
        this.log.warn("ingest interrupted by a restart; queued again", { upload: row.id, attempts: row.attempts });
      }
    }
    return told;
  }

  private async run(lane: Lane): Promise<void> {
    while (this.running) {
      if (lane === "main" && !this.recovered) await this.recover();
      const row = await this.claim(lane).catch((error: Error) => {
        this.log.error("cannot claim an ingest", { error: error.message });
        return undefined;
      });
      if (row) {
        try {
          await this.ingest(row, lane);
        } catch (error) {
          // What ingest() does not handle itself (its first queries, or failing the upload): the
          // upload fails if the store lets it, and the loop goes on. Unhandled, this rejection
          // ended the whole process.
          this.log.error("ingest could not run", { upload: row.id, error: (error as Error).message });
          await this.fail(row, SERVER_SIDE_FAILURE).catch((failError: Error) =>
            this.log.error("could not mark the upload failed", { upload: row.id, error: failError.message }),
          );
          // A store that is down fails every query at once: do not spin on it.
          await new Promise((resolve) => setTimeout(resolve, FAILURE_PAUSE_MS));
        }
        continue;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, IDLE_POLL_MS);
        this.wakers.add(wake);
      });
    }
  }

  /**
   * The next upload for a lane: the oldest queued one of the tenant served least recently (never
   * served first), so a tenant with many uploads queued takes turns with the others instead of
   * keeping them waiting behind all of its own. The small lane considers only small files. Two
   * large ingests never run at once: one peaks near 800 MB above idle (docs/uploads.md, The ingest).
   */
  private async claim(lane: Lane): Promise<UploadRow | undefined> {
    const rows = await this.db
      .select({
        id: uploads.id,
        indexId: uploads.indexId,
        tenantId: indexes.tenantId,
        bytes: uploads.bytesReceived,
        state: uploads.state,
      })
      .from(uploads)
      .innerJoin(indexes, eq(indexes.id, uploads.indexId))
      .where(and(inArray(uploads.state, ["queued", "running"]), this.mine()))
      .orderBy(asc(uploads.queuedAt), asc(uploads.id));
    // One index's uploads run one after the other, in the order they were completed: the last
    // one completed is the one that ends up active, whichever lane each ran in.
    const indexBusy = new Set(rows.filter((r) => r.state === "running").map((r) => r.indexId));
    const queued: typeof rows = [];
    for (const r of rows) {
      if (r.state !== "queued" || indexBusy.has(r.indexId)) continue;
      indexBusy.add(r.indexId);
      if (lane === "main" || (r.bytes <= this.smallLane.storedBytes && !this.tooBigForSmallLane.has(r.id)))
        queued.push(r);
    }
    let next: (typeof queued)[number] | undefined;
    for (const candidate of queued) {
      const last = this.served.get(candidate.tenantId) ?? Number.NEGATIVE_INFINITY;
      if (!next || last < (this.served.get(next.tenantId) ?? Number.NEGATIVE_INFINITY)) next = candidate;
    }
    if (!next) return undefined;
    const [row] = await this.db
      .update(uploads)
      .set({ state: "running", startedAt: this.now(), finishedAt: null, attempts: sql`${uploads.attempts} + 1` })
      .where(and(eq(uploads.id, next.id), eq(uploads.state, "queued")))
      .returning();
    // The other lane took it meanwhile: look again at once rather than after the idle poll.
    if (!row) return this.claim(lane);
    this.served.set(next.tenantId, ++this.turn);
    if (lane === "main") this.tooBigForSmallLane.delete(row.id);
    return row;
  }

  /** The uploads this node ingests: all of them, or with replication those it holds the bytes of. */
  private mine() {
    return this.node === undefined ? undefined : eq(uploads.node, this.node);
  }

  private async ingest(row: UploadRow, lane: Lane): Promise<void> {
    const ref = await this.catalog.byId(row.indexId);
    if (!ref) return; // the index was deleted meanwhile; its rows went with it
    const major = Number(row.version);
    const startedAt = row.startedAt ?? this.now();
    const skipInvalid = row.skipInvalid === 1;
    const log = this.log.child({ index: ref.id, version: row.version, upload: row.id });
    const deleted = new Set(
      (await this.db.select({ id: tombstones.recordId }).from(tombstones).where(eq(tombstones.indexId, ref.id))).map(
        (t) => t.id,
      ),
    );

    const progress = { bytesRead: 0, recordsIngested: 0, recordsSuppressed: 0, recordsInvalid: 0, errorCount: 0 };
    const errors: RecordError[] = [];
    let lastSaved = 0;
    const save = async (force = false) => {
      if (!force && this.now() - lastSaved < PROGRESS_EVERY_MS) return;
      lastSaved = this.now();
      await this.db
        .update(uploads)
        .set({ ...progress, errors })
        .where(eq(uploads.id, row.id));
    };

    let writer: BulkWriter | undefined;
    try {
      const upload = await openUpload(await this.blobs.read(uploadBlobKey(row)), {
        generateId: randomUUID,
        onProgress: (bytes) => (progress.bytesRead = bytes),
        signal: this.abort.signal,
        // The small lane's bound, but never past the upload limit itself: a file between the two
        // was accepted there whenever it ran in that lane (the main lane refused it).
        maxExpandedBytes:
          lane === "small"
            ? Math.min(this.smallLane.expandedBytes, this.limits.expandedBytes)
            : this.limits.expandedBytes,
      });
      await this.db
        .update(uploads)
        .set({ format: upload.format, gzip: upload.gzip ? 1 : 0 })
        .where(eq(uploads.id, row.id));
      writer = await this.engine.bulkWriter(ref.id, major);
      let seen = 0;
      for await (const batch of upload.batches) {
        seen += batch.records.length + batch.errors.length;
        if (lane === "small" && seen > this.smallLane.records)
          throw new UploadLimitError("too many records for the small lane");
        if (seen > this.limits.records) {
          throw new UploadLimitError(
            `the file holds more than ${this.limits.records} records, the limit of one upload (SIFT_MAX_UPLOAD_RECORDS): split it`,
          );
        }
        if (batch.errors.length) {
          progress.recordsInvalid += batch.errors.length;
          progress.errorCount += batch.errors.length;
          errors.push(...batch.errors.slice(0, MAX_REPORTED_ERRORS - errors.length));
          // The file fails as a whole: stop writing, keep reading only to report the first errors.
          if (!skipInvalid && writer) {
            await writer.abort();
            writer = undefined;
          }
        }
        if (writer) {
          const kept = deleted.size ? batch.records.filter((r) => !deleted.has(r.id)) : batch.records;
          progress.recordsSuppressed += batch.records.length - kept.length;
          progress.recordsIngested += kept.length;
          // Counted as written, so an id repeated in the file counts each time it occurs.
          if (progress.recordsIngested > this.limits.recordsPerIndex) {
            throw new UploadLimitError(
              `the file holds more than ${this.limits.recordsPerIndex} records, the quota of records per index (quota.recordsPerIndex, SIFT_QUOTA_RECORDS_PER_INDEX)`,
            );
          }
          if (kept.length) await writer.add(kept);
        }
        if (!writer && errors.length >= MAX_REPORTED_ERRORS) {
          await upload.batches.return();
          break;
        }
        await save();
      }
      if (!writer) {
        await this.fail(
          row,
          invalidSummary(progress.recordsInvalid, errors.length >= MAX_REPORTED_ERRORS),
          progress,
          errors,
        );
        log.info("ingest failed: invalid records", { invalid: progress.recordsInvalid });
        return;
      }
      // How long reading and adding the records took, and building (and, replicated, publishing)
      // the segment: the phases bench:replication compares.
      const committing = this.now();
      const { records } = await writer.commit();
      const commitMs = this.now() - committing;
      writer = undefined;
      const live = await this.versions.finishBulk(ref, major, { records, activate: row.activate === 1, startedAt });
      await this.db
        .update(uploads)
        .set({ ...progress, errors, state: "succeeded", finishedAt: this.now() })
        .where(eq(uploads.id, row.id));
      await this.blobs.delete(uploadBlobKey(row));
      log.info("ingest succeeded", {
        records,
        live,
        ms: this.now() - startedAt,
        addMs: committing - startedAt,
        commitMs,
      });
    } catch (error) {
      // The failure below is what gets reported; an abort that fails too leaves an uncommitted
      // version the engine never shows, so it is only logged.
      await writer
        ?.abort()
        .catch((abortError: Error) => log.warn("could not abort the bulk writer", { error: abortError.message }));
      if (this.abort.signal.aborted) return; // shutting down: recoverInterrupted() resumes it next start
      if (lane === "small" && error instanceof UploadLimitError) {
        // Past the small lane's bounds (or a real limit, which the main lane then reports).
        this.tooBigForSmallLane.add(row.id);
        await this.requeue(row, { refundAttempt: true });
        log.info("ingest left to the main lane", { error: error.message });
        this.notify();
      } else if (error instanceof UploadLimitError) {
        await this.fail(row, error.message, progress, errors);
        log.info("ingest failed: over a limit", { error: error.message });
      } else if (error instanceof UploadParseError) {
        errors.push({ line: error.line, message: error.message });
        progress.errorCount += 1;
        await this.fail(row, `the file cannot be read past line ${error.line}: ${error.message}`, progress, errors);
        log.info("ingest failed: unreadable file", { line: error.line, error: error.message });
      } else {
        log.error("ingest crashed", { error: (error as Error).message, stack: (error as Error).stack });
        await this.fail(row, SERVER_SIDE_FAILURE, progress, errors);
      }
    }
  }

  /** Back in the queue, in its old place, its counters reset; a lane's hand-over is no attempt. */
  private async requeue(row: UploadRow, options: { refundAttempt?: boolean } = {}): Promise<void> {
    await this.db
      .update(uploads)
      .set({
        state: "queued",
        ...(options.refundAttempt ? { attempts: sql`${uploads.attempts} - 1` } : {}),
        bytesRead: 0,
        recordsIngested: 0,
        recordsSuppressed: 0,
        recordsInvalid: 0,
        errors: [],
        errorCount: 0,
      })
      .where(eq(uploads.id, row.id));
  }

  private async fail(
    row: UploadRow,
    reason: string,
    progress?: Partial<
      Pick<UploadRow, "bytesRead" | "recordsIngested" | "recordsSuppressed" | "recordsInvalid" | "errorCount">
    >,
    errors?: RecordError[],
  ): Promise<void> {
    await this.db
      .update(uploads)
      // A failed ingest changes nothing: no record of it is searchable, whatever reached the writer.
      .set({
        ...progress,
        recordsIngested: 0,
        ...(errors ? { errors } : {}),
        state: "failed",
        failureReason: reason,
        finishedAt: this.now(),
      })
      .where(eq(uploads.id, row.id));
    await this.versions.failBulk(row.indexId, Number(row.version));
    // The ingest has failed either way; a blob left behind only takes disk space.
    await this.blobs
      .delete(uploadBlobKey(row))
      .catch((error: Error) =>
        this.log.warn("could not delete the blob of a failed ingest", { upload: row.id, error: error.message }),
      );
  }

  /** For tests and shutdown: true while any upload is queued or running. */
  async busy(): Promise<boolean> {
    const rows = await this.db
      .select({ id: uploads.id })
      .from(uploads)
      .where(inArray(uploads.state, ["queued", "running"]))
      .limit(1);
    return rows.length > 0;
  }
}

function invalidSummary(invalid: number, stoppedEarly: boolean): string {
  const count = stoppedEarly ? `at least ${invalid}` : String(invalid);
  return `${count} record(s) are invalid (see errors); fix them, or complete with skipInvalid: true to ingest the valid ones`;
}
