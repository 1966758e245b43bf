// Per-index lag as /v1/regions reports it (docs/replication.md, Health): a node that has not
// applied the entry that made the store's active version live is behind by the versions between
// its own and that one, and by how long ago the newest of them was written. One whose store shows
// nothing newer yet, while the log holds an entry it has not processed, is behind by the versions
// up to the one that entry makes, since that entry (D-301, D-309).
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import type { EntryTail } from "../../src/ports/change-log.ts";
import { RegionLagService, versionsUpTo } from "../../src/services/region-lag.ts";
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
    const logTail = async () => ({ seq: 7, at: now - 2_000 });
    const behind = new RegionLagService(
      db,
      { active: () => "0.1", newest: () => "0.1", appliedSeq: () => 5, logTail, isAside: () => false },
      () => now,
    );
    expect(await behind.forTenant("ten_l")).toEqual([
      { indexName: "shop", activeVersion: "0.1", behindVersions: 2, lagMs: 1_500 },
    ]);
    // Once it has applied the entry that set the store's active version, it no longer trails.
    const caughtUp = new RegionLagService(
      db,
      { active: () => "0.3", newest: () => "0.3", appliedSeq: () => 7, logTail, isAside: () => false },
      () => now,
    );
    expect((await caughtUp.forTenant("ten_l"))[0]).toMatchObject({ behindVersions: 0, lagMs: 0 });
    // Another tenant's indexes are not listed.
    expect(await behind.forTenant("ten_other")).toEqual([]);
  });

  test("a node the store shows caught up trails while the log holds an entry it has not processed", async () => {
    const db = services.store.db;
    await db.update(indexes).set({ logSeq: 7 }).where(eq(indexes.tenantId, "ten_l"));
    const now = Date.now();
    const view = (logTail: () => Promise<EntryTail | null>) =>
      new RegionLagService(
        db,
        { active: () => "0.3", newest: () => "0.3", appliedSeq: () => 7, logTail, isAside: () => false },
        () => now,
      );
    // Entry 9 was taken 40 ms ago; the writer's node has not recorded its version yet.
    expect(await view(async () => ({ seq: 9, at: now - 40, version: "0.4" })).forTenant("ten_l")).toEqual([
      { indexName: "shop", activeVersion: "0.3", behindVersions: 1, lagMs: 40 },
    ]);
    // Entries 8 and 9 hold versions 0.4 to 0.8: five behind, since the newest.
    expect(await view(async () => ({ seq: 9, at: now - 40, version: "0.8" })).forTenant("ten_l")).toEqual([
      { indexName: "shop", activeVersion: "0.3", behindVersions: 5, lagMs: 40 },
    ]);
    // An entry that makes no version (an activation) is one.
    expect((await view(async () => ({ seq: 9, at: now - 40 })).forTenant("ten_l"))[0]).toMatchObject({
      behindVersions: 1,
    });
    expect((await view(async () => ({ seq: 7, at: now - 40 })).forTenant("ten_l"))[0]).toMatchObject({
      behindVersions: 0,
      lagMs: 0,
    });
    // A log that fails or does not answer leaves it to the store.
    const failing = view(() => Promise.reject(new Error("no responders")));
    expect((await failing.forTenant("ten_l"))[0]).toMatchObject({ behindVersions: 0 });
    const silent = view(() => new Promise(() => {}));
    expect((await silent.forTenant("ten_l"))[0]).toMatchObject({ behindVersions: 0 });
  });

  test("a node that set the index aside says so, whether the store or the log shows it behind", async () => {
    const db = services.store.db;
    await db.update(indexes).set({ logSeq: 7 }).where(eq(indexes.tenantId, "ten_l"));
    const now = Date.now();
    const logTail = async () => ({ seq: 9, at: now - 40, version: "0.4" });
    const aside = (appliedSeq: number, isAside: boolean) =>
      new RegionLagService(
        db,
        { active: () => "0.1", newest: () => "0.1", appliedSeq: () => appliedSeq, logTail, isAside: () => isAside },
        () => now,
      ).forTenant("ten_l");
    // Behind by the store (0.2 and 0.3 live elsewhere), and by the log.
    expect((await aside(5, true))[0]).toMatchObject({ behindVersions: 2, setAside: true });
    expect((await aside(7, true))[0]).toMatchObject({ behindVersions: 3, setAside: true });
    // Brought back: the field is absent.
    expect((await aside(5, false))[0]).not.toHaveProperty("setAside");
  });
});

describe("versions between the newest applied and the newest in the log", () => {
  test("are counted by minor within a major, and at least by the new major's versions across", () => {
    expect(versionsUpTo("3.2", "3.9")).toBe(7);
    expect(versionsUpTo("3", "3.4")).toBe(4);
    // A new major with two minors: 4, 4.1, 4.2 at least (the rest of 3's chain is not known).
    expect(versionsUpTo("3.7", "4.2")).toBe(3);
    expect(versionsUpTo(undefined, "1.2")).toBe(3);
    // Nothing countable: the entry is still one not applied.
    expect(versionsUpTo("3.2", undefined)).toBe(1);
    expect(versionsUpTo("3.9", "3.4")).toBe(1);
    expect(versionsUpTo("4.1", "3.9")).toBe(1);
  });
});
