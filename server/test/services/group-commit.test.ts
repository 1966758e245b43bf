// Group commit in one process (D-258): the record writes queued on an index while one is in the
// engine are committed together, one engine commit and one store statement for the lot, each
// still its own version. Before, each write held the index's lock for its own store round trips
// and fsyncs, and at 500 writes/s over 6 indexes one process answered in seconds.
import { afterEach, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import type { RecordChange, SearchEngine } from "../../src/ports/engine.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_g", tenantId: "ten_g", type: "adm", userId: null };

describe.each(storeTargets())("group commit in one process, on $name", (target) => {
  let services: TestServices | undefined;
  afterEach(async () => {
    await services?.close();
    services = undefined;
  });

  /** An engine whose first batch waits for `release`, recording the size of every batch. */
  async function open(options: { writeWaitMs?: number } = {}) {
    const batches: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    services = await openServices(target, {
      ...options,
      tenantId: "ten_g",
      engine: (real: SearchEngine) =>
        Object.assign(Object.create(real) as SearchEngine, {
          applyChanges: async (key: string, changes: RecordChange[]) => {
            batches.push(changes.length);
            if (batches.length === 1) {
              entered();
              await gate;
            }
            return real.applyChanges!(key, changes);
          },
        }),
    });
    await services.catalog.createIndex("ten_g", { name: "shop", serviceName: "ten_g-shop" });
    return { services, batches, release, inside };
  }

  test("writes queued behind one in the engine are committed together, each its own version", async () => {
    const { services, batches, release, inside } = await open();
    const first = services.records.put(admin, "shop", "r0", { title: "Record 0" });
    await inside;
    const queued = [1, 2, 3, 4, 5].map((i) => services.records.put(admin, "shop", `r${i}`, { title: `Record ${i}` }));
    release();
    expect(await Promise.all([first, ...queued])).toEqual(["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]);
    expect(batches).toEqual([1, 5]);
    const ref = (await services.catalog.byName("ten_g", "shop"))!;
    expect(ref.activeVersion).toBe("0.6");
    const listed = await services.versions.list(ref);
    expect(listed.map((v) => v.version)).toEqual(expect.arrayContaining(["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]));
    for (let i = 0; i <= 5; i++) expect((await services.records.get(admin, "shop", `r${i}`)).title).toBe(`Record ${i}`);
  });

  test("a write held past its bound answers 503; the ones queued behind it are never made (D-356)", async () => {
    const { services, release, inside } = await open({ writeWaitMs: 300 });
    const { records } = services;
    const first = records.put(admin, "shop", "r0", { title: "Record 0" });
    await inside;
    const queued = [1, 2, 3].map((i) => records.put(admin, "shop", `r${i}`, { title: `Record ${i}` }));
    const answers = await Promise.allSettled([first, ...queued]);
    expect(answers[0]).toMatchObject({
      status: "rejected",
      reason: {
        name: "UnavailableError",
        retryAfterSeconds: 5,
        message: expect.stringContaining("this write is applied if the store records it when it answers"),
      },
    });
    for (const answer of answers.slice(1)) {
      expect(answer).toMatchObject({
        status: "rejected",
        reason: { name: "UnavailableError", message: expect.stringContaining("this write was not applied") },
      });
    }
    // The first, already in the engine, is finished; the others never are, and take no version.
    release();
    await expect.poll(async () => (await services.catalog.byName("ten_g", "shop"))!.activeVersion).toBe("0.1");
    expect((await records.get(admin, "shop", "r0")).title).toBe("Record 0");
    for (const i of [1, 2, 3]) await expect(records.get(admin, "shop", `r${i}`)).rejects.toThrow(/does not exist/);
    expect(await records.put(admin, "shop", "r4", { title: "Record 4" })).toBe("0.2");
    const ref = (await services.catalog.byName("ten_g", "shop"))!;
    expect((await services.versions.list(ref)).map((v) => v.version).sort()).toEqual(["0", "0.1", "0.2"]);
  });

  test("a purge queued past its bound answers 503 and erases nothing (D-356)", async () => {
    const { services, release, inside } = await open({ writeWaitMs: 300 });
    const { records } = services;
    // The engine holds the first write (and the index's lock) until released.
    const first = Promise.allSettled([records.put(admin, "shop", "r0", { title: "Record 0" })]);
    await inside;
    await expect(records.purge(admin, "shop", "r0")).rejects.toMatchObject({
      name: "UnavailableError",
      message: expect.stringContaining("this write was not applied"),
    });
    release();
    expect((await first)[0]).toMatchObject({
      status: "rejected",
      reason: { message: expect.stringContaining("applied if the store records it") },
    });
    await expect.poll(async () => (await services.catalog.byName("ten_g", "shop"))!.activeVersion).toBe("0.1");
    expect((await records.get(admin, "shop", "r0")).title).toBe("Record 0");
    expect(await records.purge(admin, "shop", "r0")).toBe("0.2");
    await expect(records.get(admin, "shop", "r0")).rejects.toThrow(/does not exist/);
  });

  test("a group the store refuses is withdrawn whole: every writer in it gets the error, the next write goes on", async () => {
    const { services, release, inside } = await open();
    const { store, records } = services;
    const first = records.put(admin, "shop", "r0", { title: "Record 0" });
    await inside;
    const queued = [1, 2, 3].map((i) => records.put(admin, "shop", `r${i}`, { title: `Record ${i}` }));
    // The first write's store statement goes through; the group's after it is refused.
    const execute = store.db.execute.bind(store.db);
    let statements = 0;
    store.db.execute = ((...args: Parameters<typeof execute>) => {
      if (++statements > 1) return Promise.reject(new Error("store fault"));
      return execute(...args);
    }) as typeof store.db.execute;
    release();
    try {
      expect(await first).toBe("0.1");
      for (const write of await Promise.allSettled(queued)) {
        expect(write).toMatchObject({ status: "rejected", reason: { message: "store fault" } });
      }
    } finally {
      store.db.execute = execute;
    }
    const ref = (await services.catalog.byName("ten_g", "shop"))!;
    expect(ref.activeVersion).toBe("0.1");
    expect((await services.versions.list(ref)).map((v) => v.version)).not.toContain("0.2");
    for (const i of [1, 2, 3]) await expect(records.get(admin, "shop", `r${i}`)).rejects.toThrow(/does not exist/);
    // The withdrawn ids are free again.
    expect(await records.put(admin, "shop", "next", { title: "Next" })).toBe("0.2");
    expect((await records.get(admin, "shop", "next")).title).toBe("Next");
  });
});
