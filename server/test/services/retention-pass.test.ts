// The periodic retention pass visits only indexes whose versions changed since it last ran
// (issue 15, finding 4: with 10,000 indexes every pass read every index's versions, and the idle
// server froze for seconds each minute). The first pass after a start visits every index.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_r", tenantId: "ten_r", type: "adm", userId: null };

describe.each(storeTargets())("the retention pass on $name", (target) => {
  let services: TestServices;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_r", policy: { retainVersions: 2 } });
    for (const name of ["a", "b", "c"]) {
      await services.catalog.createIndex("ten_r", { name, serviceName: "ten_r-shop" });
    }
  });
  afterAll(() => services?.close());

  test("visits every index first, then none while idle, then only the index written to", async () => {
    const { versions, records, catalog } = services;
    expect(await versions.applyRetentionEverywhere()).toBe(3);
    expect(await versions.applyRetentionEverywhere()).toBe(0);
    // 0.1 to 0.3, then back to 0 and on from there: 0.1 to 0.3 are on a branch no kept version needs.
    for (let i = 1; i <= 3; i++) await records.put(admin, "b", `r${i}`, { title: `Record ${i}` });
    await versions.activate((await catalog.byName("ten_r", "b"))!, "0");
    for (let i = 4; i <= 6; i++) await records.put(admin, "b", `r${i}`, { title: `Record ${i}` });
    expect(await versions.applyRetentionEverywhere()).toBe(1);
    // The pass still drops what retention does not keep: the two newest and what they are built on.
    const ref = (await catalog.byName("ten_r", "b"))!;
    expect((await versions.list(ref)).map((v) => v.version)).toEqual(["0.6", "0.5", "0.4", "0"]);
    expect(await versions.applyRetentionEverywhere()).toBe(0);
  });
});
