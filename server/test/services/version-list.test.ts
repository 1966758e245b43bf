// Listing versions read every retained version back through the engine to count its records:
// 4–5 ms of blocked event loop per version, 4.7 s at 955 versions (issue 15, finding 3). Counts
// are now stored with each version when it is made, and the listing reads them.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { createLogger } from "../../src/log.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { RecordService } from "../../src/services/records.ts";
import { VersionService } from "../../src/services/versions.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_v", tenantId: "ten_v", type: "adm", userId: null };

describe.each(storeTargets())("version listing on $name", (target) => {
  let store: Store;
  let engine: SearchEngine;
  let dir: string;
  let catalog: CatalogService;
  let versions: VersionService;
  let records: RecordService;
  let counts = 0;

  beforeAll(async () => {
    store = await target.open();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-version-list-"));
    const real = createEmbeddedEngine({ dataDir: dir });
    await real.open();
    // The same engine, counting the counts asked of it.
    engine = Object.create(real) as SearchEngine;
    engine.count = (indexKey, version) => {
      counts++;
      return real.count(indexKey, version);
    };
    const log = createLogger("silent", {}, () => {});
    catalog = new CatalogService(store.db, engine, log);
    versions = new VersionService({
      db: store.db,
      engine,
      catalog,
      log,
      policy: { coalesceAfter: 1_000, retainVersions: 1_000 },
    });
    records = new RecordService({ catalog, versions, engine });
    await store.db.insert(tenants).values({ id: "ten_v", name: "v", createdAt: 0 });
    await catalog.createService("ten_v", { name: "list-shop", regions: ["frankfurt"] });
    await catalog.createIndex("ten_v", { name: "many", serviceName: "list-shop" });
  });
  afterAll(async () => {
    await engine?.close();
    await store?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("lists 200 versions with their record counts without asking the engine for them", async () => {
    for (let i = 0; i < 150; i++) await records.put(admin, "many", `r${i}`, { title: `Record ${i}` });
    for (let i = 0; i < 50; i++) await records.delete(admin, "many", `r${i}`);
    const ref = (await catalog.byName("ten_v", "many"))!;
    counts = 0;
    const listed = await versions.list(ref);
    expect(listed).toHaveLength(201);
    // Only version 0, made with the index, has no stored count.
    expect(counts).toBeLessThanOrEqual(1);
    const byVersion = new Map(listed.map((v) => [v.version, v.records]));
    expect(byVersion.get("0.1")).toBe(1);
    expect(byVersion.get("0.150")).toBe(150);
    expect(byVersion.get("0.200")).toBe(100);
    expect(listed[0]).toMatchObject({ version: "0.200", active: true, records: 100 });
  }, 60_000);
});
