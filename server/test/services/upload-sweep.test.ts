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

/**
 * Two nodes of a deployment with replication: the bytes go to whichever one the PUT reaches (its
 * folder `blobs-node-a` or `blobs-node-b`), and only it ingests. `live`: the nodes that reported lately.
 */
function twoNodes(services: TestServices, now: () => number, live: () => string[]): [UploadService, UploadService] {
  const onNode = (node: string) =>
    new UploadService({
      db: services.store.db,
      catalog: services.catalog,
      versions: services.versions,
      blobs: createFsBlobStore(path.join(services.dir, `blobs-${node}`)),
      secret: Buffer.alloc(32, 7),
      maxUploadBytes: 1 << 20,
      onQueued: () => {},
      now,
      node,
      liveNodes: async () => live(),
    });
  return [onNode("node-a"), onNode("node-b")];
}

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

  test("with replication, uploads whose file is on a node gone for good are failed, or finished once recorded; its files removed when it is back", async () => {
    let live = ["node-a"];
    const [a, b] = twoNodes(
      services,
      () => clock,
      () => live,
    );
    const line = '{"id":"1","title":"On one disk"}\n';
    const queued = await a.start(admin, "sweep", "http://sift.test");
    await put(queued.uploadUrl, line, b);
    await a.complete(admin, { indexName: "sweep", indexVersion: queued.indexVersion });
    const uploaded = await a.start(admin, "sweep", "http://sift.test");
    await put(uploaded.uploadUrl, line, b);
    const kept = await a.start(admin, "sweep", "http://sift.test");
    await put(kept.uploadUrl, line, a);
    await a.complete(admin, { indexName: "sweep", indexVersion: kept.indexVersion });
    // Two that node-b was ingesting when it stopped: one before its version was recorded, one
    // after (its records written, its version made ready; not yet activated).
    const index = (await services.catalog.byName("ten_u", "sweep"))!;
    const ingesting = async (recorded: boolean) => {
      const started = await a.start(admin, "sweep", "http://sift.test");
      await put(started.uploadUrl, line, b);
      await a.complete(admin, { indexName: "sweep", indexVersion: started.indexVersion });
      await services.store.db
        .update(uploadRows)
        .set({ state: "running", startedAt: clock })
        .where(and(eq(uploadRows.indexId, index.id), eq(uploadRows.version, started.indexVersion)));
      if (recorded) {
        const writer = await services.engine.bulkWriter(index.id, Number(started.indexVersion));
        await writer.add([
          { id: "1", title: "On one disk" },
          { id: "2", title: "Recorded before its node stopped" },
        ]);
        await writer.commit();
        await services.store.db
          .update(versions)
          .set({ state: "ready", records: 2 })
          .where(and(eq(versions.indexId, index.id), eq(versions.version, started.indexVersion)));
      }
      return started;
    };
    const cutOff = await ingesting(false);
    const recorded = await ingesting(true);
    const state = async (version: string) => (await a.status(admin, "sweep", version)).state;
    const activeBefore = (await services.catalog.byName("ten_u", "sweep"))!.activeVersion;

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
    expect((await services.catalog.byName("ten_u", "sweep"))!.activeVersion).toBe(activeBefore);
    expect(await a.sweepOrphaned()).toBe(4);
    for (const version of [queued.indexVersion, uploaded.indexVersion, cutOff.indexVersion]) {
      expect(await a.status(admin, "sweep", version)).toMatchObject({ state: "failed", failureReason: ORPHANED });
      const [row] = await services.store.db
        .select({ state: versions.state })
        .from(versions)
        .where(and(eq(versions.indexId, index.id), eq(versions.version, version)));
      // Failed; retention after the finished upload's new major may have dropped it since.
      expect(["failed", "dropped"]).toContain(row?.state);
    }
    expect(await state(kept.indexVersion)).toBe("queued");
    // The recorded one is finished as its node would have: succeeded, and live as it asked.
    const finished = await a.status(admin, "sweep", recorded.indexVersion);
    expect(finished).toMatchObject({ state: "succeeded", recordsIngested: 2 });
    expect(finished.failureReason).toBeUndefined();
    expect((await services.catalog.byName("ten_u", "sweep"))!.activeVersion).toBe(recorded.indexVersion);
    expect(await services.engine.get(index.id, recorded.indexVersion, "2")).toMatchObject({
      title: "Recorded before its node stopped",
    });
    expect(await a.sweepOrphaned()).toBe(0);

    // node-b, back: the files of its settled uploads go, those still waiting stay.
    expect(blobCount("blobs-node-b")).toBe(4);
    expect(await b.removeOrphanedFiles()).toBe(4);
    expect(blobCount("blobs-node-b")).toBe(0);
    expect(await a.removeOrphanedFiles()).toBe(0);
    expect(blobCount("blobs-node-a")).toBe(1);
  });
});

describe.each(storeTargets())("an ingest finished late on $name", (target) => {
  let services: TestServices;
  const live = ["node-a"];
  const clock = 1_000_000;
  let a: UploadService;
  let b: UploadService;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_l", now: () => clock });
    [a, b] = twoNodes(
      services,
      () => clock,
      () => live,
    );
    await services.catalog.createIndex("ten_l", { name: "late", serviceName: "ten_l-shop" });
  });
  afterAll(() => services?.close());

  const lateAdmin: Principal = { ...admin, keyId: "key_l", tenantId: "ten_l" };
  const ref = async () => (await services.catalog.byName("ten_l", "late"))!;
  const build = async (major: number, title: string) => {
    const writer = await services.engine.bulkWriter((await ref()).id, major);
    await writer.add([{ id: "1", title }]);
    await writer.commit();
  };
  /** An upload node-b was ingesting when it stopped, after its records were written and its version made ready. */
  const recordedOnB = async (title: string) => {
    const started = await a.start(lateAdmin, "late", "http://sift.test");
    const url = new URL(started.uploadUrl);
    await b.receive(
      url.pathname.split("/").pop()!,
      Number(url.searchParams.get("expires")),
      url.searchParams.get("signature")!,
      undefined,
      (async function* () {
        yield new TextEncoder().encode(`{"id":"1","title":"${title}"}\n`);
      })(),
    );
    await a.complete(lateAdmin, { indexName: "late", indexVersion: started.indexVersion });
    const { id } = await ref();
    await services.store.db
      .update(uploadRows)
      .set({ state: "running", startedAt: clock })
      .where(and(eq(uploadRows.indexId, id), eq(uploadRows.version, started.indexVersion)));
    await build(Number(started.indexVersion), title);
    await services.store.db
      .update(versions)
      .set({ state: "ready", records: 1 })
      .where(and(eq(versions.indexId, id), eq(versions.version, started.indexVersion)));
    return started.indexVersion;
  };
  const sweepTwice = async () => (await a.sweepOrphaned()) + (await a.sweepOrphaned());

  test("goes live over a checkpoint of what it replaces, not over a later upload that went live", async () => {
    const first = await recordedOnB("First upload");
    // A checkpoint drawn after the upload's major, of the version the upload replaces.
    await services.versions.applyRecordChange(await ref(), { upserts: [{ id: "9", title: "Written meanwhile" }] });
    const checkpoint = await services.versions.coalesce(await ref());
    expect(Number(checkpoint)).toBeGreaterThan(Number(first));
    expect(await sweepTwice()).toBe(1);
    expect((await a.status(lateAdmin, "late", first)).state).toBe("succeeded");
    expect((await ref()).activeVersion).toBe(first);

    const second = await recordedOnB("Second upload");
    // A later upload finished and went live, then was checkpointed.
    const later = await services.versions.takeMajor((await ref()).id);
    await build(later, "Later upload");
    await services.versions.finishBulk(await ref(), later, { records: 1, activate: true, startedAt: clock });
    const laterCheckpoint = await services.versions.coalesce(await ref());
    expect(await sweepTwice()).toBe(1);
    expect((await a.status(lateAdmin, "late", second)).state).toBe("succeeded");
    expect((await ref()).activeVersion).toBe(laterCheckpoint);
    expect((await services.versions.list(await ref())).find((v) => v.version === second)?.state).toBe("ready");
  });
});
