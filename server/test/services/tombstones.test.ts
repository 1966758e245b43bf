// A delete outlives branching (docs/versions.md, Tombstones): after a roll back to a version that
// still holds a deleted record, the next write on top of it deletes the record again. The facts
// a write reads of its parent (record count, newer tombstones) come from one store query; this
// checks it on both stores.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_a", tenantId: "ten_a", type: "adm", userId: null };

describe.each(storeTargets())("tombstones on $name", (target) => {
  let services: TestServices;
  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_a" });
    await services.catalog.createIndex("ten_a", { name: "shop", serviceName: "ten_a-shop" });
  });
  afterAll(() => services?.close());

  test("a write after rolling back past a delete deletes the record again", async () => {
    const { records, versions, catalog } = services;
    await records.put(admin, "shop", "a", { title: "Apple" });
    const both = await records.put(admin, "shop", "b", { title: "Banana" });
    expect(await records.delete(admin, "shop", "a")).toBe("0.3");
    await versions.activate((await catalog.byName("ten_a", "shop"))!, both);
    // The rolled-back version shows what it held.
    expect((await records.get(admin, "shop", "a")).title).toBe("Apple");
    expect(await records.put(admin, "shop", "c", { title: "Cherry" })).toBe("0.4");
    await expect(records.get(admin, "shop", "a")).rejects.toThrow(/does not exist/);
    expect((await records.get(admin, "shop", "b")).title).toBe("Banana");
    // Written again, it is back, and a later write on top does not delete it.
    await records.put(admin, "shop", "a", { title: "Apple again" });
    await records.put(admin, "shop", "d", { title: "Date" });
    expect((await records.get(admin, "shop", "a")).title).toBe("Apple again");
    const listed = await versions.list((await catalog.byName("ten_a", "shop"))!);
    expect(listed.find((v) => v.version === "0.4")).toMatchObject({ parent: "0.2", records: 2, kind: "change" });
  });
});
