// A record write is one step across engine and store (issue 15, Deliver 1): when any part of it
// fails after the engine has written the change, the engine's version is withdrawn, the index
// stays at its previous version everywhere, and the next write succeeds. Before, the engine was
// left one version ahead and every later write to the index failed until a restart.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_a", tenantId: "ten_a", type: "adm", userId: null };

describe.each(storeTargets())("a write that fails half-way on $name", (target) => {
  let services: TestServices;
  let failCount = false;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_a",
      // Counting the new version is the step between the engine's write and the store's.
      engine: (real: SearchEngine) =>
        Object.assign(Object.create(real) as SearchEngine, {
          count: async (key: string, version: string) => {
            if (failCount) throw new Error("engine fault while counting");
            return real.count(key, version);
          },
        }),
    });
    await services.catalog.createIndex("ten_a", { name: "shop", serviceName: "ten_a-shop" });
    await services.records.put(admin, "shop", "kept", { title: "Kept" });
  });
  afterAll(() => services?.close());

  async function expectUnchanged(before: string) {
    const ref = (await services.catalog.byName("ten_a", "shop"))!;
    expect(ref.activeVersion).toBe(before);
    const listed = await services.versions.list(ref);
    expect(listed.map((v) => v.version)).not.toContain("0.2");
    await expect(services.records.get(admin, "shop", "lost")).rejects.toThrow(/does not exist/);
  }

  test("a store that fails to record the version leaves both at the previous one, and writes go on", async () => {
    const { store, records } = services;
    const before = (await services.catalog.byName("ten_a", "shop"))!.activeVersion;
    // The version row, the active version and the tombstones go to the store in one statement.
    const execute = store.db.execute.bind(store.db);
    store.db.execute = (async () => {
      throw new Error("store fault");
    }) as unknown as typeof store.db.execute;
    try {
      await expect(records.put(admin, "shop", "lost", { title: "Lost" })).rejects.toThrow(/store fault/);
    } finally {
      store.db.execute = execute;
    }
    await expectUnchanged(before);
    // The failed version's id is free again and the engine agrees with the store.
    expect(await records.put(admin, "shop", "next", { title: "Next" })).toBe("0.2");
    expect((await records.get(admin, "shop", "next")).title).toBe("Next");
    await expect(records.get(admin, "shop", "lost")).rejects.toThrow(/does not exist/);
    expect((await records.get(admin, "shop", "kept")).title).toBe("Kept");
  });

  test("an engine fault after its write is undone the same way", async () => {
    const { records } = services;
    const before = (await services.catalog.byName("ten_a", "shop"))!.activeVersion;
    failCount = true;
    try {
      await expect(records.put(admin, "shop", "lost", { title: "Lost" })).rejects.toThrow(/engine fault/);
    } finally {
      failCount = false;
    }
    expect((await services.catalog.byName("ten_a", "shop"))!.activeVersion).toBe(before);
    expect(await records.delete(admin, "shop", "next")).toBe("0.3");
    await expect(records.get(admin, "shop", "lost")).rejects.toThrow(/does not exist/);
  });
});
