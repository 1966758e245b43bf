// The ingest queue is fair across tenants (issue 15, finding 5): a tenant that queued several
// uploads does not keep another tenant's one-record upload waiting until all of them are done.
// The runner starts only once everything is queued, so the order it picks is all that is tested.
import path from "node:path";
import { Readable } from "node:stream";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { IngestRunner } from "../../src/ingest/runner.ts";
import { uploadBlobKey, type BlobStore } from "../../src/ports/blobs.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants, uploads, versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("ingest queue on $name", (target) => {
  let services: TestServices;
  let store: Store;
  let blobs: BlobStore;
  let runner: IngestRunner;
  let tick = 0;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_a" });
    store = services.store;
    await store.db.insert(tenants).values({ id: "ten_b", name: "ten_b", createdAt: 0 });
    await services.catalog.createService("ten_b", {
      name: `ten-b-shop-${target.name}-${process.pid}`,
      regions: ["frankfurt"],
    });
    await services.catalog.createIndex("ten_a", { name: "big", serviceName: "ten_a-shop" });
    await services.catalog.createIndex("ten_b", {
      name: "small",
      serviceName: `ten-b-shop-${target.name}-${process.pid}`,
    });
    blobs = createFsBlobStore(path.join(services.dir, "blobs"));
    runner = new IngestRunner({
      db: store.db,
      engine: services.engine,
      blobs,
      catalog: services.catalog,
      versions: services.versions,
      log: services.log,
      // A clock that moves on every reading: start times say the order, with no ties.
      now: () => ++tick,
    });
  });
  afterAll(async () => {
    await runner?.stop();
    await services?.close();
  });

  let queuedAt = 0;
  const queue = async (tenantId: string, indexName: string, records: number) => {
    const ref = (await services.catalog.byName(tenantId, indexName))!;
    const major = await services.versions.takeMajor(ref.id);
    const version = String(major);
    await store.db.insert(versionRows).values({
      indexId: ref.id,
      version,
      major,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: 0,
    });
    const lines = Array.from({ length: records }, (_, i) => `{"id":"${i}","title":"Record ${i}"}\n`).join("");
    const { bytes } = await blobs.write(
      uploadBlobKey({ indexId: ref.id, version }),
      Readable.from([Buffer.from(lines)]),
      {
        maxBytes: 1 << 30,
      },
    );
    const id = `upl_${target.name}_${tenantId}_${version}`;
    await store.db.insert(uploads).values({
      id,
      indexId: ref.id,
      version,
      state: "queued",
      bytesReceived: bytes,
      expiresAt: Date.now() + 60_000,
      createdAt: 0,
      queuedAt: ++queuedAt,
    });
    return id;
  };
  const rowOf = async (id: string) => (await store.db.select().from(uploads).where(eq(uploads.id, id)))[0]!;

  test("another tenant's one-record upload runs after the ingest in progress, not after the whole queue", async () => {
    // Tenant A queues three uploads, then tenant B one.
    const big = [
      await queue("ten_a", "big", 20_000),
      await queue("ten_a", "big", 20_000),
      await queue("ten_a", "big", 20_000),
    ];
    const small = await queue("ten_b", "small", 1);
    await runner.start();
    for (let i = 0; i < 600 && (await runner.busy()); i++) await new Promise((resolve) => setTimeout(resolve, 100));

    const rows = await Promise.all([...big, small].map(rowOf));
    expect(rows.map((r) => r.state)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    const order = [...rows].sort((x, y) => x.startedAt! - y.startedAt!).map((r) => r.id);
    // The first of A's uploads was already the oldest; B's comes next, before A's others.
    expect(order).toEqual([big[0], small, big[1], big[2]]);
    // B's upload was done while A still had uploads waiting.
    expect(rows[3]!.finishedAt!).toBeLessThan(rows[1]!.startedAt!);
  });
});
