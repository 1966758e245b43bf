// The ingest runner must survive a failure outside the ingest proper (issue 15, finding 11): a
// rejected first query of an ingest used to escape the runner's loop as an unhandled rejection,
// which ends a Node process. Now the upload fails and the loop goes on to the next one.
import path from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { IngestRunner } from "../../src/ingest/runner.ts";
import type { CatalogService } from "../../src/services/catalog.ts";
import type { Store } from "../../src/store/open.ts";
import { uploads, versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

describe.each(storeTargets())("ingest runner on $name", (target) => {
  let services: TestServices;
  let store: Store;
  let runner: IngestRunner;
  let indexId: string;
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);

  beforeAll(async () => {
    process.on("unhandledRejection", onRejection);
    services = await openServices(target, { tenantId: "ten_r" });
    const { catalog, versions, engine, log, dir } = services;
    store = services.store;
    await catalog.createIndex("ten_r", { name: "runner", serviceName: "ten_r-shop" });
    indexId = (await catalog.byName("ten_r", "runner"))!.id;
    // The first query of every ingest fails, as it would with the store gone for a moment.
    const failing = Object.create(catalog) as CatalogService;
    failing.byId = () => Promise.reject(new Error("connection reset"));
    runner = new IngestRunner({
      db: store.db,
      engine,
      blobs: createFsBlobStore(path.join(dir, "blobs")),
      catalog: failing,
      versions,
      log,
    });
  });
  afterAll(async () => {
    process.off("unhandledRejection", onRejection);
    await runner?.stop();
    await services?.close();
  });

  const queue = async (version: number) => {
    const id = `upl_${target.name}_${version}`;
    await store.db.insert(versionRows).values({
      indexId,
      version: String(version),
      major: version,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: 0,
    });
    await store.db.insert(uploads).values({
      id,
      indexId,
      version: String(version),
      state: "queued",
      expiresAt: Date.now() + 60_000,
      createdAt: 0,
      queuedAt: version,
    });
    return id;
  };
  const stateOf = async (id: string) => (await store.db.select().from(uploads).where(eq(uploads.id, id)))[0]!;

  test("a failing first query fails that upload and the runner goes on to the next", async () => {
    const first = await queue(1);
    const second = await queue(2);
    await runner.start();
    for (let i = 0; i < 100 && (await stateOf(second)).state !== "failed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (const id of [first, second]) {
      expect(await stateOf(id)).toMatchObject({
        state: "failed",
        failureReason: expect.stringMatching(/failed on the server's side/),
      });
    }
    expect(rejections).toEqual([]);
  });
});
