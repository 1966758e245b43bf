// An ingest cut off by a kill after its version was recorded (D-324) is finished when its node
// starts again, as it would have been, not run again from its file; one cut off before that is
// queued again and runs from the file.
import path from "node:path";
import { Readable } from "node:stream";
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { IngestRunner } from "../../src/ingest/runner.ts";
import { type BlobStore, uploadBlobKey } from "../../src/ports/blobs.ts";
import { uploads, versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("interrupted ingests on $name", (target) => {
  let services: TestServices;
  let blobs: BlobStore;
  let runner: IngestRunner | undefined;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_c" });
    await services.catalog.createIndex("ten_c", { name: "cut", serviceName: "ten_c-shop" });
    await services.catalog.createIndex("ten_c", { name: "early", serviceName: "ten_c-shop" });
    blobs = createFsBlobStore(path.join(services.dir, "blobs"));
  });
  afterAll(async () => {
    await runner?.stop();
    await services?.close();
  });

  /** An upload that was running when its node was killed, its file still on the node's disk. */
  const running = async (indexId: string, title: string) => {
    const major = await services.versions.takeMajor(indexId);
    const version = String(major);
    await services.store.db
      .insert(versionRows)
      .values({ indexId, version, major, minor: 0, parent: null, kind: "bulk", state: "pending", createdAt: 0 });
    const file = Buffer.from(`{"id":"1","title":"${title}"}\n`);
    await blobs.write(uploadBlobKey({ indexId, version }), Readable.from([file]), { maxBytes: 1 << 20 });
    const id = `upl_${target.name}_${indexId}_${version}`;
    await services.store.db.insert(uploads).values({
      id,
      indexId,
      version,
      state: "running",
      bytesReceived: file.byteLength,
      expiresAt: Date.now() + 60_000,
      createdAt: 0,
      queuedAt: major,
      startedAt: Date.now(),
      attempts: 1,
    });
    return { id, major, version };
  };
  const rowOf = async (id: string) => (await services.store.db.select().from(uploads).where(eq(uploads.id, id)))[0]!;
  const until = async (id: string, state: string) => {
    for (let i = 0; i < 300 && (await rowOf(id)).state !== state; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return rowOf(id);
  };

  test("one whose version was recorded is finished at start; one cut off before is run again", async () => {
    const ref = (await services.catalog.byName("ten_c", "cut"))!;
    const early = (await services.catalog.byName("ten_c", "early"))!;
    const before = await running(early.id, "Cut off before its version was recorded");
    const after = await running(ref.id, "Read from the file");
    // The records it had written and its version made ready: what a kill left of its ingest.
    const writer = await services.engine.bulkWriter(ref.id, after.major);
    await writer.add([{ id: "1", title: "Written before the kill" }]);
    await writer.commit();
    await services.store.db
      .update(versionRows)
      .set({ state: "ready", records: 1 })
      .where(and(eq(versionRows.indexId, ref.id), eq(versionRows.version, after.version)));

    runner = new IngestRunner({
      db: services.store.db,
      engine: services.engine,
      blobs,
      catalog: services.catalog,
      versions: services.versions,
      log: services.log,
    });
    await runner.start();

    expect(await until(after.id, "succeeded")).toMatchObject({ state: "succeeded", recordsIngested: 1, attempts: 1 });
    // Its file goes right after (the state is written first).
    await expect.poll(() => blobs.size(uploadBlobKey({ indexId: ref.id, version: after.version }))).toBeUndefined();
    expect(await services.engine.get(ref.id, after.version, "1")).toMatchObject({ title: "Written before the kill" });

    expect((await services.catalog.byName("ten_c", "cut"))!.activeVersion).toBe(after.version);

    // The other ran again from its file.
    expect(await until(before.id, "succeeded")).toMatchObject({ attempts: 2, recordsIngested: 1 });
    expect(await services.engine.get(early.id, before.version, "1")).toMatchObject({
      title: "Cut off before its version was recorded",
    });
    expect((await services.catalog.byName("ten_c", "early"))!.activeVersion).toBe(before.version);
  });
});
