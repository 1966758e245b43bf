// The catalog's lookup cache must agree with this process's own writes at once (issue 15,
// finding 9): a lookup that missed used to be cached for 5 s, so creating that index answered
// 500 and reads and writes to it answered 404 until the entry expired. The clock is frozen, so
// no entry ever expires during a test: only invalidation can make the cache agree.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { NotFoundError } from "../../src/domain/errors.ts";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { createLogger } from "../../src/log.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { RecordService } from "../../src/services/records.ts";
import { VersionService } from "../../src/services/versions.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

const TENANT = "ten_c";
const admin: Principal = { kind: "key", keyId: "key_c", tenantId: TENANT, type: "adm", userId: null };

describe.each(storeTargets())("catalog lookup cache on $name", (target) => {
  let store: Store;
  let engine: SearchEngine;
  let engineDir: string;
  let catalog: CatalogService;
  let records: RecordService;

  beforeAll(async () => {
    store = await target.open();
    engineDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-catalog-cache-"));
    engine = createEmbeddedEngine({ dataDir: engineDir });
    await engine.open();
    const log = createLogger("error", {}, () => {});
    const now = () => 1_000;
    catalog = new CatalogService(store.db, engine, log, now);
    const versions = new VersionService({
      db: store.db,
      engine,
      catalog,
      log,
      now,
      policy: { coalesceAfter: 1_000, retainVersions: 10 },
    });
    records = new RecordService({ catalog, versions, engine });
    await store.db.insert(tenants).values({ id: TENANT, name: "c", createdAt: 0 });
    await catalog.createService(TENANT, { name: "cache-shop", regions: ["frankfurt"] });
  });
  afterAll(async () => {
    await engine?.close();
    await store?.close();
    if (engineDir) fs.rmSync(engineDir, { recursive: true, force: true });
  });

  test("an index looked up while missing can be created, then read and written at once", async () => {
    await expect(catalog.getIndex(TENANT, "fresh")).rejects.toBeInstanceOf(NotFoundError);
    await expect(catalog.byServiceAndName("cache-shop", "fresh")).resolves.toBeUndefined();

    const created = await catalog.createIndex(TENANT, { name: "fresh", serviceName: "cache-shop" });
    expect(created).toMatchObject({ name: "fresh", serviceName: "cache-shop", activeVersion: "0", records: 0 });

    await expect(catalog.getIndex(TENANT, "fresh")).resolves.toMatchObject({ name: "fresh" });
    await expect(catalog.byServiceAndName("cache-shop", "fresh")).resolves.toMatchObject({ name: "fresh" });
    const version = await records.put(admin, "fresh", "r1", { title: "Margherita" });
    await expect(records.get(admin, "fresh", "r1")).resolves.toMatchObject({ id: "r1", title: "Margherita" });
    await expect(catalog.getIndex(TENANT, "fresh")).resolves.toMatchObject({ activeVersion: version, records: 1 });
  });

  test("an index deleted and created again under its name is the new one at once", async () => {
    await catalog.createIndex(TENANT, { name: "again", serviceName: "cache-shop" });
    await records.put(admin, "again", "old", { title: "Old" });
    await catalog.getIndex(TENANT, "again"); // caches the ref of the first index

    await catalog.deleteIndex(TENANT, "again");
    await expect(catalog.getIndex(TENANT, "again")).rejects.toBeInstanceOf(NotFoundError);
    await expect(records.put(admin, "again", "old", { title: "Old" })).rejects.toBeInstanceOf(NotFoundError);

    await expect(catalog.createIndex(TENANT, { name: "again", serviceName: "cache-shop" })).resolves.toMatchObject({
      name: "again",
      records: 0,
    });
    await expect(records.get(admin, "again", "old")).rejects.toBeInstanceOf(NotFoundError);
    await records.put(admin, "again", "new", { title: "New" });
    await expect(records.get(admin, "again", "new")).resolves.toMatchObject({ id: "new" });
  });

  test("a create refused because another process made the name drops this process's cached miss", async () => {
    // A second catalog over the same store stands for another process.
    const other = new CatalogService(
      store.db,
      engine,
      createLogger("error", {}, () => {}),
      () => 1_000,
    );
    await expect(catalog.getIndex(TENANT, "elsewhere")).rejects.toBeInstanceOf(NotFoundError);
    await other.createIndex(TENANT, { name: "elsewhere", serviceName: "cache-shop" });

    await expect(catalog.createIndex(TENANT, { name: "elsewhere", serviceName: "cache-shop" })).rejects.toMatchObject({
      name: "ConflictError",
    });
    await expect(catalog.getIndex(TENANT, "elsewhere")).resolves.toMatchObject({ name: "elsewhere" });
    await records.put(admin, "elsewhere", "r1", { title: "Found" });
    await expect(records.get(admin, "elsewhere", "r1")).resolves.toMatchObject({ id: "r1" });
  });
});
