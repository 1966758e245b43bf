// Files of uploads never completed used to stay on disk forever (issue 15, finding 12): they are
// deleted, and their versions failed, once their URL has expired and nothing can complete them.
import fs from "node:fs";
import path from "node:path";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { ORPHANED, UNCOMPLETED_GRACE_MS, UPLOAD_URL_TTL_MS, UploadService } from "../../src/services/uploads.ts";
import { uploads as uploadRows, versions } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_u", tenantId: "ten_u", type: "adm", userId: null };
const REQUEST_TIMEOUT_MS = 12 * 3_600_000;

describe.each(storeTargets())("abandoned uploads on $name", (target) => {
  let services: TestServices;
  let dir: string;
  let uploads: UploadService;
  let clock = 1_000_000;

  beforeAll(async () => {
    const now = () => clock;
    services = await openServices(target, { tenantId: "ten_u", now });
    dir = services.dir;
    uploads = new UploadService({
      db: services.store.db,
      catalog: services.catalog,
      versions: services.versions,
      blobs: createFsBlobStore(path.join(dir, "blobs")),
      secret: Buffer.alloc(32, 7),
      maxUploadBytes: 1 << 20,
      onQueued: () => {},
      now,
    });
    await services.catalog.createIndex("ten_u", { name: "sweep", serviceName: "ten_u-shop" });
  });
  afterAll(() => services?.close());

  const blobCount = (folder = "blobs") =>
    fs
      .readdirSync(path.join(dir, folder), { recursive: true, encoding: "utf8" })
      .filter((f) => fs.statSync(path.join(dir, folder, f)).isFile()).length;
  const put = async (uploadUrl: string, text: string, to = uploads) => {
    const url = new URL(uploadUrl);
    const id = url.pathname.split("/").pop()!;
    await to.receive(
      id,
      Number(url.searchParams.get("expires")),
      url.searchParams.get("signature")!,
      undefined,
      (async function* () {
        yield new TextEncoder().encode(text);
      })(),
    );
  };

  test("a file never completed is deleted an hour after its URL expired; its version fails", async () => {
    const uploaded = await uploads.start(admin, "sweep", "http://sift.test");
    await put(uploaded.uploadUrl, '{"id":"1","title":"Never completed"}\n');
    const unused = await uploads.start(admin, "sweep", "http://sift.test");
    expect(blobCount()).toBe(1);

    clock += UPLOAD_URL_TTL_MS + UNCOMPLETED_GRACE_MS - 1;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(0);
    expect((await uploads.status(admin, "sweep", uploaded.indexVersion)).state).toBe("uploaded");

    clock += 2;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(1);
    expect(blobCount()).toBe(0);
    expect(await uploads.status(admin, "sweep", uploaded.indexVersion)).toMatchObject({
      state: "failed",
      failureReason: expect.stringMatching(/never completed/),
    });
    // A URL never used is kept while a PUT begun before its expiry could still be running.
    expect((await uploads.status(admin, "sweep", unused.indexVersion)).state).toBe("awaiting_upload");
    clock += REQUEST_TIMEOUT_MS;
    expect(await uploads.sweepAbandoned(REQUEST_TIMEOUT_MS)).toBe(1);
    expect((await uploads.status(admin, "sweep", unused.indexVersion)).state).toBe("failed");
  });

  test("with replication, uploads whose file is on a node gone for good are failed, its file removed when it is back", async () => {
    let live = ["node-a"];
    // Two nodes of a deployment: the bytes go to whichever one the PUT reaches, and only it ingests.
    const onNode = (node: string) =>
      new UploadService({
        db: services.store.db,
        catalog: services.catalog,
        versions: services.versions,
        blobs: createFsBlobStore(path.join(dir, `blobs-${node}`)),
        secret: Buffer.alloc(32, 7),
        maxUploadBytes: 1 << 20,
        onQueued: () => {},
        now: () => clock,
        node,
        liveNodes: async () => live,
      });
    const [a, b] = [onNode("node-a"), onNode("node-b")];
    const line = '{"id":"1","title":"On one disk"}\n';
    const queued = await a.start(admin, "sweep", "http://sift.test");
    await put(queued.uploadUrl, line, b);
    await a.complete(admin, { indexName: "sweep", indexVersion: queued.indexVersion });
    const uploaded = await a.start(admin, "sweep", "http://sift.test");
    await put(uploaded.uploadUrl, line, b);
    const kept = await a.start(admin, "sweep", "http://sift.test");
    await put(kept.uploadUrl, line, a);
    await a.complete(admin, { indexName: "sweep", indexVersion: kept.indexVersion });
    // Two that node-b was ingesting when it stopped: one before its version was published, one after.
    const index = (await services.catalog.byName("ten_u", "sweep"))!;
    const ingesting = async (versionState: "pending" | "ready") => {
      const started = await a.start(admin, "sweep", "http://sift.test");
      await put(started.uploadUrl, line, b);
      await a.complete(admin, { indexName: "sweep", indexVersion: started.indexVersion });
      await services.store.db
        .update(uploadRows)
        .set({ state: "running" })
        .where(and(eq(uploadRows.indexId, index.id), eq(uploadRows.version, started.indexVersion)));
      await services.store.db
        .update(versions)
        .set({ state: versionState })
        .where(and(eq(versions.indexId, index.id), eq(versions.version, started.indexVersion)));
      return started;
    };
    const cutOff = await ingesting("pending");
    const published = await ingesting("ready");
    const state = async (version: string) => (await a.status(admin, "sweep", version)).state;

    // node-b reported lately; node-a not among the live ones cannot tell.
    live = ["node-a", "node-b"];
    expect(await a.sweepOrphaned()).toBe(0);
    live = ["node-c"];
    expect(await a.sweepOrphaned()).toBe(0);
    expect(await state(queued.indexVersion)).toBe("queued");

    // Missing from one sweep's list is not enough: it may have been read at the wrong moment.
    live = ["node-a"];
    expect(await a.sweepOrphaned()).toBe(0);
    live = ["node-a", "node-b"];
    expect(await a.sweepOrphaned()).toBe(0);
    live = ["node-a"];
    expect(await a.sweepOrphaned()).toBe(0);
    expect(await state(queued.indexVersion)).toBe("queued");
    expect(await a.sweepOrphaned()).toBe(3);
    for (const version of [queued.indexVersion, uploaded.indexVersion, cutOff.indexVersion]) {
      expect(await a.status(admin, "sweep", version)).toMatchObject({ state: "failed", failureReason: ORPHANED });
      const [row] = await services.store.db
        .select({ state: versions.state })
        .from(versions)
        .where(and(eq(versions.indexId, index.id), eq(versions.version, version)));
      expect(row?.state).toBe("failed");
    }
    expect(await state(kept.indexVersion)).toBe("queued");
    expect(await state(published.indexVersion)).toBe("running");

    // node-b, back: the files of its failed uploads go.
    expect(blobCount("blobs-node-b")).toBe(4);
    expect(await b.removeOrphanedFiles()).toBe(3);
    expect(blobCount("blobs-node-b")).toBe(1);
    expect(blobCount("blobs-node-a")).toBe(1);
  });
});
