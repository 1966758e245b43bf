// Listing versions read every retained version back through the engine to count its records:
// 4–5 ms of blocked event loop per version, 4.7 s at 955 versions (issue 15, finding 3). Counts
// are now stored with each version when it is made, and the listing reads them.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_v", tenantId: "ten_v", type: "adm", userId: null };

describe.each(storeTargets())("version listing on $name", (target) => {
  let services: TestServices;
  let counts = 0;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_v",
      policy: { retainVersions: 1_000 },
      // The same engine, counting the counts asked of it.
      engine: (real) => {
        const counting = Object.create(real) as typeof real;
        counting.count = (indexKey, version) => {
          counts++;
          return real.count(indexKey, version);
        };
        return counting;
      },
    });
    await services.catalog.createIndex("ten_v", { name: "many", serviceName: "ten_v-shop" });
  });
  afterAll(() => services?.close());

  test("lists 200 versions with their record counts without asking the engine for them", async () => {
    const { catalog, versions, records } = services;
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
