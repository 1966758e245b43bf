// Per-index lag as /v1/regions reports it (docs/replication.md, Health): a node that has not
// applied the entry that made the store's active version live is behind by the versions between
// its own and that one, and by how long ago the newest of them was written.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { RegionLagService } from "../../src/services/region-lag.ts";
import { indexes, versions } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_l", tenantId: "ten_l", type: "adm", userId: null };

describe.each(storeTargets())("region lag on $name", (target) => {
  let services: TestServices;
  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_l" });
    await services.catalog.createIndex("ten_l", { name: "shop", serviceName: "ten_l-shop" });
    for (const id of ["a", "b", "c"]) await services.records.put(admin, "shop", id, { title: id });
  });
  afterAll(() => services?.close());

  test("one process never trails", async () => {
    const lag = await new RegionLagService(services.store.db, undefined).forTenant("ten_l");
    expect(lag).toEqual([{ indexName: "shop", activeVersion: "0.3", behindVersions: 0, lagMs: 0 }]);
  });

  test("a node that applied up to 0.1 trails by two versions, since the newest was written", async () => {
    const db = services.store.db;
    await db.update(indexes).set({ logSeq: 7 }).where(eq(indexes.tenantId, "ten_l"));
    const [newest] = await db.select({ at: versions.createdAt }).from(versions).where(eq(versions.version, "0.3"));
    const now = newest!.at + 1_500;
    const behind = new RegionLagService(db, { active: () => "0.1", appliedSeq: () => 5 }, () => now);
    expect(await behind.forTenant("ten_l")).toEqual([
      { indexName: "shop", activeVersion: "0.1", behindVersions: 2, lagMs: 1_500 },
    ]);
    // Once it has applied the entry that set the store's active version, it no longer trails.
    const caughtUp = new RegionLagService(db, { active: () => "0.3", appliedSeq: () => 7 }, () => now);
    expect((await caughtUp.forTenant("ten_l"))[0]).toMatchObject({ behindVersions: 0, lagMs: 0 });
    // Another tenant's indexes are not listed.
    expect(await behind.forTenant("ten_other")).toEqual([]);
  });
});
