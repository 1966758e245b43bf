// Bulk upload (docs/uploads.md, The flow): start assigns the next version and a signed URL; the PUT streams
// the bytes into the blob store; complete queues the ingest and returns at once.
import { and, eq, inArray, lt, ne, or, sum } from "drizzle-orm";
import type { components } from "@sift/contract";
import type { Principal } from "../auth/principal.ts";
import { authorizeIndex, tenantOf } from "../auth/authority.ts";
import { newId } from "../auth/secrets.ts";
import { sign, verifySignature } from "../auth/signing.ts";
import {
  ConflictError,
  ForbiddenError,
  InvalidArgumentError,
  NotFoundError,
  PayloadTooLargeError,
  QuotaExceededError,
  QuotaInUseError,
} from "../domain/errors.ts";
import { BlobTooLargeError, UPLOAD_BLOBS, uploadBlobKey, uploadOfBlobKey, type BlobStore } from "../ports/blobs.ts";
import type { Db } from "../store/open.ts";
import { indexes, uploads } from "../store/schema.ts";
import type { CatalogService, IndexRef } from "./catalog.ts";
import type { VersionService } from "./versions.ts";
import { insertVersion, versionRow } from "./versions/rows.ts";
import { storeStep } from "./store-deadline.ts";

type IngestStatus = components["schemas"]["IngestStatus"];
type UploadRow = typeof uploads.$inferSelect;

export const UPLOAD_URL_TTL_MS = 15 * 60_000;
/** How long an uploaded file waits for `complete` after its URL expired, before it is deleted. */
export const UNCOMPLETED_GRACE_MS = 60 * 60_000;
/** Per-tenant limits of uploads (docs/api.md, Limits). */
export interface UploadQuotas {
  /** Bytes of uploads stored or arriving and not yet ingested. */
  uploadBytes: number;
  /** Uploads started and not finished ingesting. */
  concurrentUploads: number;
}
export const DEFAULT_UPLOAD_QUOTAS: UploadQuotas = { uploadBytes: 40 * 1024 ** 3, concurrentUploads: 10 };
/** A hint, not a promise: an upload slot frees when an ingest ends or an unused URL expires. */
const CONCURRENT_RETRY_AFTER_SECONDS = 30;
const ABANDONED =
  "the upload was never completed: its file was deleted after the upload URL expired; start a new upload";
export const ORPHANED =
  "the node that received the file stopped for good before its ingest finished (the file was on its disk only); start a new upload";

export class UploadService {
  private readonly db: Db;
  private readonly catalog: CatalogService;
  private readonly versions: VersionService;
  private readonly blobs: BlobStore;
  private readonly secret: Buffer;
  private readonly maxUploadBytes: number;
  private readonly quotas: UploadQuotas;
  private readonly onQueued: () => void;
  private readonly now: () => number;
  /** With replication: this node, recorded with the bytes it receives (it ingests them). */
  private readonly node: string | undefined;
  /** With replication: the nodes that reported lately; the others are gone (sweepOrphaned). */
  private readonly liveNodes: (() => Promise<string[]>) | undefined;
  /**
   * On PostgreSQL: how long a PUT of bytes waits for each of its store steps (D-362). Its whole
   * call cannot be bounded as the other steps' are (D-360): the bytes take as long as the client
   * takes to send them.
   */
  private readonly storeWaitMs: number | undefined;
  /** Nodes of pending uploads that the last sweep found gone: a second sweep must find them gone too. */
  private goneAtLastSweep = new Set<string>();
  /**
   * Uploads whose bytes are arriving right now (a second PUT must not interleave), with their
   * tenant and the bytes so far, which count against the tenant's quota of upload bytes.
   */
  private readonly receiving = new Map<string, { tenantId: string; bytes: number }>();

  constructor(deps: {
    db: Db;
    catalog: CatalogService;
    versions: VersionService;
    blobs: BlobStore;
    secret: Buffer;
    maxUploadBytes: number;
    quotas?: Partial<UploadQuotas>;
    onQueued: () => void;
    now?: () => number;
    node?: string;
    liveNodes?: () => Promise<string[]>;
    storeWaitMs?: number;
  }) {
    this.db = deps.db;
    this.catalog = deps.catalog;
    this.versions = deps.versions;
    this.blobs = deps.blobs;
    this.secret = deps.secret;
    this.maxUploadBytes = deps.maxUploadBytes;
    this.quotas = { ...DEFAULT_UPLOAD_QUOTAS, ...deps.quotas };
    this.onQueued = deps.onQueued;
    this.now = deps.now ?? Date.now;
    this.node = deps.node;
    this.liveNodes = deps.liveNodes;
    this.storeWaitMs = deps.storeWaitMs;
  }

  private async index(p: Principal, indexName: string, missing: "400" | "404"): Promise<IndexRef> {
    const tenantId = tenantOf(p);
    const ref = tenantId ? await this.catalog.byName(tenantId, indexName) : undefined;
    try {
      return this.catalog.servedHere(authorizeIndex(p, "index.write", ref, indexName));
    } catch (error) {
      // docs/uploads.md, Start: starting an upload for an index that does not exist is a 400.
      if (missing === "400" && error instanceof NotFoundError) {
        throw new InvalidArgumentError(`index "${indexName}" does not exist: create it first`, [
          { field: "indexName", message: "no such index" },
        ]);
      }
      throw error;
    }
  }

  async start(p: Principal, indexName: string, baseUrl: string): Promise<{ uploadUrl: string; indexVersion: string }> {
    const ref = await this.index(p, indexName, "400");
    // Read before the write, so starts at the same moment may pass the quotas by a few (as the
    // index quota may): they bound what a tenant piles up, not to the unit.
    const inProgress = await this.inProgress(ref.tenantId);
    if (inProgress >= this.quotas.concurrentUploads) {
      throw new QuotaInUseError(
        "concurrentUploads",
        this.quotas.concurrentUploads,
        `the tenant has ${inProgress} uploads started and not finished ingesting, its quota: complete or wait for one`,
        CONCURRENT_RETRY_AFTER_SECONDS,
      );
    }
    const held = await this.heldBytes(ref.tenantId);
    if (held >= this.quotas.uploadBytes) throw this.bytesQuotaError(held);
    const major = await this.versions.takeMajor(ref.id);
    const version = String(major);
    const now = this.now();
    const row = {
      id: newId("upl"),
      indexId: ref.id,
      version,
      state: "awaiting_upload" as const,
      expiresAt: now + UPLOAD_URL_TTL_MS,
      createdAt: now,
    };
    await this.db.transaction(async (tx) => {
      await insertVersion(tx, {
        indexId: ref.id,
        version,
        major,
        minor: 0,
        parent: null,
        kind: "bulk",
        state: "pending",
        createdAt: now,
      });
      await tx.insert(uploads).values(row);
    });
    const signature = sign(this.secret, this.signedMessage(row.id, row.indexId, version, row.expiresAt));
    return {
      uploadUrl: `${baseUrl}/v1/blobs/${row.id}?expires=${row.expiresAt}&signature=${signature}`,
      indexVersion: version,
    };
  }

  /** The HMAC covers method, upload, index, version and expiry: change any and the URL is refused. */
  private signedMessage(uploadId: string, indexId: string, version: string, expires: number): string {
    return `PUT\n${uploadId}\n${indexId}\n${version}\n${expires}`;
  }

  async receive(
    uploadId: string,
    expires: number,
    signature: string,
    declaredLength: number | undefined,
    body: AsyncIterable<Uint8Array> | null,
  ): Promise<{ bytes: number }> {
    const [row] = await storeStep(
      this.storeWaitMs,
      false,
      this.db.select().from(uploads).where(eq(uploads.id, uploadId)).limit(1),
    );
    const valid =
      row &&
      row.expiresAt === expires &&
      verifySignature(this.secret, this.signedMessage(row.id, row.indexId, row.version, expires), signature);
    if (!valid) throw new ForbiddenError("the upload URL is not valid: its signature does not match");
    if (this.now() > expires)
      throw new ForbiddenError("the upload URL has expired (they are valid for 15 minutes): start a new upload");
    if (row.state !== "awaiting_upload" || this.receiving.has(row.id)) {
      throw new ConflictError("this upload URL has already been used: start a new upload to send another file");
    }
    if (declaredLength !== undefined && declaredLength > this.maxUploadBytes) {
      throw new PayloadTooLargeError(`the file is larger than the upload limit of ${this.maxUploadBytes} bytes`);
    }
    if (!body)
      throw new InvalidArgumentError("the upload has no body: PUT the file's bytes", [
        { field: "body", message: "is required" },
      ]);
    const tenantId = (await storeStep(this.storeWaitMs, false, this.catalog.byId(row.indexId)))?.tenantId ?? "";
    const held = await storeStep(this.storeWaitMs, false, this.heldBytes(tenantId));
    if (held + (declaredLength ?? 0) > this.quotas.uploadBytes || held >= this.quotas.uploadBytes) {
      throw this.bytesQuotaError(held);
    }
    if (this.receiving.has(row.id)) {
      throw new ConflictError("this upload URL has already been used: start a new upload to send another file");
    }
    const arriving = { tenantId, bytes: 0 };
    this.receiving.set(row.id, arriving);
    try {
      const counted = this.countArriving(body, arriving, held - this.arrivingBytes(tenantId));
      const { bytes } = await this.blobs.write(uploadBlobKey(row), counted, { maxBytes: this.maxUploadBytes });
      // Timed out, the file stays stored: the store's late answer records it as any other's would.
      await storeStep(
        this.storeWaitMs,
        true,
        this.db
          .update(uploads)
          .set({ state: "uploaded", bytesReceived: bytes, node: this.node ?? null })
          .where(eq(uploads.id, row.id)),
      );
      return { bytes };
    } catch (error) {
      if (error instanceof BlobTooLargeError) throw new PayloadTooLargeError(error.message);
      throw error;
    } finally {
      this.receiving.delete(row.id);
    }
  }

  /** Bytes of the tenant's uploads stored and not yet ingested, plus those arriving right now. */
  private async heldBytes(tenantId: string): Promise<number> {
    const [stored] = await this.db
      .select({ bytes: sum(uploads.bytesReceived) })
      .from(uploads)
      .innerJoin(indexes, eq(indexes.id, uploads.indexId))
      .where(and(eq(indexes.tenantId, tenantId), inArray(uploads.state, ["uploaded", "queued", "running"])));
    return Number(stored?.bytes ?? 0) + this.arrivingBytes(tenantId);
  }

  private arrivingBytes(tenantId: string): number {
    let bytes = 0;
    for (const arriving of this.receiving.values()) if (arriving.tenantId === tenantId) bytes += arriving.bytes;
    return bytes;
  }

  /**
   * Passes the body on, counting its bytes as arriving for the tenant, and stops it once the
   * tenant's stored bytes (read when the PUT began) and all its arriving bytes pass the quota.
   */
  private async *countArriving(
    body: AsyncIterable<Uint8Array>,
    arriving: { tenantId: string; bytes: number },
    stored: number,
  ): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      arriving.bytes += chunk.byteLength;
      const held = stored + this.arrivingBytes(arriving.tenantId);
      if (held > this.quotas.uploadBytes) throw this.bytesQuotaError(held);
      yield chunk;
    }
  }

  private bytesQuotaError(held: number): QuotaExceededError {
    return new QuotaExceededError(
      "uploadBytes",
      this.quotas.uploadBytes,
      `the tenant's uploads not yet ingested would hold more than ${this.quotas.uploadBytes} bytes, its quota (${held} held now): complete or wait for an ingest, or send a smaller file`,
    );
  }

  /**
   * Uploads of the tenant started and not finished ingesting: URLs still valid or in use, files
   * stored and not completed, and ingests queued or running. An expired URL no longer counts.
   */
  private async inProgress(tenantId: string): Promise<number> {
    const now = this.now();
    const rows = await this.db
      .select({ id: uploads.id, state: uploads.state, expiresAt: uploads.expiresAt })
      .from(uploads)
      .innerJoin(indexes, eq(indexes.id, uploads.indexId))
      .where(
        and(
          eq(indexes.tenantId, tenantId),
          inArray(uploads.state, ["awaiting_upload", "uploaded", "queued", "running"]),
        ),
      );
    return rows.filter((r) => r.state !== "awaiting_upload" || r.expiresAt >= now || this.receiving.has(r.id)).length;
  }

  async complete(
    p: Principal,
    input: { indexName: string; indexVersion: string; activate?: boolean; skipInvalid?: boolean },
  ): Promise<void> {
    const ref = await this.index(p, input.indexName, "404");
    const row = await this.row(ref, input.indexVersion);
    if (row.state === "awaiting_upload") {
      throw new ConflictError(
        `no file has been uploaded for version ${input.indexVersion}: PUT the bytes to the upload URL first`,
      );
    }
    if (row.state !== "uploaded")
      throw new ConflictError(`version ${input.indexVersion} was already completed (ingest ${row.state})`);
    const [queued] = await this.db
      .update(uploads)
      .set({
        state: "queued",
        activate: input.activate === false ? 0 : 1,
        skipInvalid: input.skipInvalid ? 1 : 0,
        queuedAt: this.now(),
      })
      .where(and(eq(uploads.id, row.id), eq(uploads.state, "uploaded")))
      .returning({ id: uploads.id });
    if (!queued) throw new ConflictError(`version ${input.indexVersion} was already completed`);
    this.onQueued();
  }

  async status(p: Principal, indexName: string, version: string): Promise<IngestStatus> {
    const ref = await this.index(p, indexName, "404");
    return toStatus(ref.name, await this.row(ref, version), this.now());
  }

  /**
   * Deletes the files of uploads never completed and fails their versions: a file PUT but never
   * completed, an hour after its URL expired; a URL never used (or a PUT cut off), once no
   * request started before the expiry can still be running (`requestTimeoutMs` later).
   * Returns how many were swept.
   */
  async sweepAbandoned(requestTimeoutMs: number): Promise<number> {
    const now = this.now();
    const rows = await this.db
      .select()
      .from(uploads)
      .where(
        or(
          and(eq(uploads.state, "uploaded"), lt(uploads.expiresAt, now - UNCOMPLETED_GRACE_MS)),
          and(eq(uploads.state, "awaiting_upload"), lt(uploads.expiresAt, now - requestTimeoutMs)),
        ),
      );
    let swept = 0;
    for (const row of rows) {
      if (this.receiving.has(row.id)) continue;
      const [failed] = await this.db
        .update(uploads)
        .set({ state: "failed", failureReason: ABANDONED, finishedAt: now })
        .where(and(eq(uploads.id, row.id), eq(uploads.state, row.state)))
        .returning({ id: uploads.id });
      if (!failed) continue; // completed (or swept) meanwhile
      await this.versions.failBulk(row.indexId, Number(row.version));
      await this.blobs.delete(uploadBlobKey(row));
      swept++;
    }
    return swept;
  }

  /**
   * With replication, settles the uploads whose file another node received and that node is gone
   * (silent for SIFT_REPLICATION_NODE_GONE_MS): only it could ingest them, and they would stay
   * queued for good, counted against the tenant's quotas. They fail, except an ingest cut off
   * after its version was recorded (its bulk entry is in the log): that one is finished here, its
   * activation included unless a later upload went live meanwhile (D-324). Nothing is done while
   * this node is not among the live ones itself (the list may not be current), and a node must be
   * missing from the list at two sweeps in a row: a report read at the wrong moment does not fail
   * anything. Returns how many were settled.
   */
  async sweepOrphaned(): Promise<number> {
    if (!this.liveNodes || this.node === undefined) return 0;
    const rows = await this.db
      .select()
      .from(uploads)
      .where(and(inArray(uploads.state, ["uploaded", "queued", "running"]), ne(uploads.node, this.node)));
    // Most sweeps find no other node's upload pending: the positions in the log are not read then.
    // A log out of reach says nothing here (the node's readiness reports it).
    const live = rows.length ? new Set(await this.liveNodes().catch(() => [] as string[])) : undefined;
    if (!live?.has(this.node)) {
      this.goneAtLastSweep = new Set();
      return 0;
    }
    const confirmed = this.goneAtLastSweep;
    this.goneAtLastSweep = new Set(rows.map((row) => row.node!).filter((node) => !live.has(node)));
    let settled = 0;
    for (const row of rows) {
      if (!this.goneAtLastSweep.has(row.node!) || !confirmed.has(row.node!)) continue;
      if (row.state === "running") {
        // A log that does not say (out of reach, or this node behind) leaves it to the next sweep.
        // biome-ignore lint/plugin: the node's readiness reports a log out of reach; the next sweep asks again.
        const recorded = await this.versions.bulkRecorded(row.indexId, Number(row.version)).catch(() => undefined);
        if (recorded === undefined) continue;
        if (recorded) {
          const { db, catalog, versions, now } = this;
          if (await finishRecordedIngest({ db, catalog, versions, now }, row)) settled++;
          continue;
        }
      }
      const [done] = await this.db
        .update(uploads)
        .set({ state: "failed", failureReason: ORPHANED, finishedAt: this.now() })
        .where(and(eq(uploads.id, row.id), eq(uploads.state, row.state)))
        .returning({ id: uploads.id });
      if (!done) continue; // claimed (or swept) meanwhile
      await this.versions.failBulk(row.indexId, Number(row.version));
      settled++;
    }
    return settled;
  }

  /**
   * This node's upload files that another node settled while it was gone (sweepOrphaned), or that
   * a failure could not delete: removed when it starts again. Read from the disk, which holds only
   * the files of uploads not yet ingested. Returns how many.
   */
  async removeOrphanedFiles(): Promise<number> {
    if (this.node === undefined) return 0;
    let removed = 0;
    for (const key of await this.blobs.list(UPLOAD_BLOBS)) {
      const upload = uploadOfBlobKey(key);
      if (!upload) continue;
      const [row] = await this.db
        .select({ state: uploads.state })
        .from(uploads)
        .where(and(eq(uploads.indexId, upload.indexId), eq(uploads.version, upload.version)))
        .limit(1);
      // No row: its index was deleted, and its uploads with it.
      if (row && row.state !== "succeeded" && row.state !== "failed") continue;
      await this.blobs.delete(key);
      removed++;
    }
    return removed;
  }

  private async row(ref: IndexRef, version: string): Promise<UploadRow> {
    const [row] = await this.db
      .select()
      .from(uploads)
      .where(and(eq(uploads.indexId, ref.id), eq(uploads.version, version)))
      .limit(1);
    if (!row) throw new NotFoundError(`no upload for version ${version} of index "${ref.name}"`);
    return row;
  }
}

/**
 * Finishes an ingest that was cut off after its version was recorded (VersionService.bulkRecorded):
 * the version's remaining steps, then the upload succeeded with what the version holds. Its file
 * is left to whoever holds it. False when another node or run finished it first.
 */
export async function finishRecordedIngest(
  deps: { db: Db; catalog: Pick<CatalogService, "byId">; versions: VersionService; now: () => number },
  row: UploadRow,
): Promise<boolean> {
  const ref = await deps.catalog.byId(row.indexId);
  if (!ref) return false; // the index was deleted meanwhile; its rows went with it
  await deps.versions.finishBulk(ref, Number(row.version), {
    activate: row.activate === 1 ? "unless-superseded" : false,
    startedAt: row.startedAt ?? row.createdAt,
  });
  const records = (await versionRow(deps.db, row.indexId, row.version))?.records ?? row.recordsIngested;
  const [done] = await deps.db
    .update(uploads)
    .set({ state: "succeeded", bytesRead: row.bytesReceived, recordsIngested: records, finishedAt: deps.now() })
    .where(and(eq(uploads.id, row.id), eq(uploads.state, "running")))
    .returning({ id: uploads.id });
  return done !== undefined;
}

export function toStatus(indexName: string, row: UploadRow, now: number): IngestStatus {
  const status: IngestStatus = {
    indexName,
    indexVersion: row.version,
    state: row.state,
    bytesReceived: row.bytesReceived,
    bytesRead: row.bytesRead,
    recordsIngested: row.recordsIngested,
    recordsSuppressed: row.recordsSuppressed,
    recordsInvalid: row.recordsInvalid,
    activate: row.activate === 1,
    skipInvalid: row.skipInvalid === 1,
    errors: row.errors,
    errorCount: row.errorCount,
    createdAt: row.createdAt,
  };
  if (row.format) status.format = row.format;
  if (row.gzip !== null) status.gzip = row.gzip === 1;
  if (row.failureReason) status.failureReason = row.failureReason;
  if (row.startedAt) {
    status.startedAt = row.startedAt;
    status.durationMs = (row.finishedAt ?? now) - row.startedAt;
  }
  if (row.finishedAt) status.finishedAt = row.finishedAt;
  return status;
}
