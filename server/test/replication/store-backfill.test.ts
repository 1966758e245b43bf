// What every node records in the shared store for the changes it applies (docs/replication.md):
// when a change's writer died between the log and the store, its version row and its tombstones
// are recorded by the nodes that applied it, as the writer would have; a tombstone recorded that
// late for a record a later change wrote again does not stay.
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import { type BackfillRow, StoreBackfill } from "../../src/replication/store-backfill.ts";
import { type ChangeRow, recordChanges } from "../../src/services/versions/change-rows.ts";
import type { Store } from "../../src/store/open.ts";
import { indexes, services, tenants, tombstones, versions } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

const silent = createLogger("silent", {}, () => {});

/** A change's version row as a replica sees it in the log. */
const row = (version: string, at: number): BackfillRow => ({
  indexId: "idx_b",
  version,
  major: Number(version.split(".")[0]),
  minor: Number(version.split(".")[1] ?? 0),
  parent: null,
  kind: "change",
  state: "ready",
  records: 1,
  createdAt: at,
  purgedRecordId: null,
  purgedBy: null,
});

/** The same change recorded first by another statement: its writer's node's, say (change-rows.ts). */
const recorded = (version: string, at: number, effects: { rewritten: string[]; deleted: string[] }): ChangeRow => ({
  indexId: "idx_b",
  version,
  parent: "0",
  kind: "change",
  records: 1,
  createdAt: at,
  purgedRecordId: null,
  purgedBy: null,
  ...effects,
});

describe.each(storeTargets())("the store backfill ($name)", (target) => {
  let store: Store;
  beforeAll(async () => {
    store = await target.open();
    await store.db.insert(tenants).values({ id: "ten_b", name: "ten_b", createdAt: 0 });
    await store.db.insert(services).values({
      id: "svc_b",
      tenantId: "ten_b",
      name: "ten_b-shop",
      regions: ["frankfurt"],
      replicas: 1,
      createdAt: 0,
    });
    await store.db.insert(indexes).values({
      id: "idx_b",
      tenantId: "ten_b",
      serviceId: "svc_b",
      name: "shop",
      visibility: "PRIVATE",
      activeVersion: "0",
      createdAt: 0,
    });
  });
  afterAll(() => store?.close());

  const tombstonesNow = async () =>
    Object.fromEntries(
      (await store.db.select().from(tombstones).where(eq(tombstones.indexId, "idx_b"))).map((t) => [
        t.recordId,
        t.version,
      ]),
    );
  const versionsNow = async () =>
    (await store.db.select({ v: versions.version }).from(versions).where(eq(versions.indexId, "idx_b")))
      .map((r) => r.v)
      .sort();

  test("records a dead writer's rows and tombstones, and leaves a live writer's alone", async () => {
    const backfill = new StoreBackfill(store.db, silent, 60_000);
    // 0.1 and 0.2 were recorded by their writer; 0.3's writer died after the log had it.
    await recordChanges(
      store.db,
      [
        recorded("0.1", 1, { rewritten: ["a", "b", "c"], deleted: [] }),
        recorded("0.2", 2, { rewritten: [], deleted: ["c"] }),
      ],
      { activate: false, ifAbsent: true },
    );
    expect(await tombstonesNow()).toEqual({ c: "0.2" });
    backfill.addRow(row("0.1", 1), { rewritten: ["a", "b", "c"], deleted: [] });
    backfill.addRow(row("0.2", 2), { rewritten: [], deleted: ["c"] });
    backfill.addRow(row("0.3", 3), { rewritten: ["c"], deleted: ["a"] });
    await backfill.flush();
    expect(await versionsNow()).toEqual(["0.1", "0.2", "0.3"]);
    // 0.1's rewrite of c (recorded by its writer) does not take 0.2's tombstone away; 0.3's does.
    expect(await tombstonesNow()).toEqual({ a: "0.3" });
  });

  test("a late tombstone goes once a later change that wrote the record again is applied", async () => {
    const backfill = new StoreBackfill(store.db, silent, 60_000);
    // 0.4 deletes b and its writer dies; 0.5 writes b again and its writer's node records it at
    // once, before this node's batch with 0.4 reaches the store.
    backfill.addRow(row("0.4", 4), { rewritten: [], deleted: ["b"] });
    await recordChanges(store.db, [recorded("0.5", 5, { rewritten: ["b"], deleted: [] })], {
      activate: false,
      ifAbsent: true,
    });
    await backfill.flush();
    expect(await versionsNow()).toContain("0.4");
    expect((await tombstonesNow()).b).toBe("0.4");
    // This node's next batch holds 0.5: its row is there already, but b's tombstone is older.
    backfill.addRow(row("0.5", 5), { rewritten: ["b"], deleted: [] });
    await backfill.flush();
    expect(await tombstonesNow()).toEqual({ a: "0.3" });
  });

  test("a tombstone newer than a change stays, by version order, not by clocks", async () => {
    const backfill = new StoreBackfill(store.db, silent, 60_000);
    await recordChanges(store.db, [recorded("0.10", 10, { rewritten: [], deleted: ["d"] })], {
      activate: false,
      ifAbsent: true,
    });
    // 0.9 wrote d and its writer died (its clock ahead of 0.10's); applied here after 0.10 was
    // recorded. 0.10 comes after 0.9, though not as text.
    backfill.addRow(row("0.9", 20), { rewritten: ["d"], deleted: [] });
    await backfill.flush();
    expect((await tombstonesNow()).d).toBe("0.10");
  });
  const activeNow = async () =>
    (
      await store.db
        .select({ version: indexes.activeVersion, seq: indexes.logSeq })
        .from(indexes)
        .where(eq(indexes.id, "idx_b"))
    )[0];

  test("the active version of the latest log position stays; one from an earlier position does not set it back", async () => {
    const backfill = new StoreBackfill(store.db, silent, 60_000);
    backfill.setActive("idx_b", "0.5", 50);
    await backfill.flush();
    expect(await activeNow()).toEqual({ version: "0.5", seq: 50 });
    backfill.setActive("idx_b", "0.4", 40);
    await backfill.flush();
    expect(await activeNow()).toEqual({ version: "0.5", seq: 50 });
  });

  // PGlite has one connection: a transaction holding the row would hold the flush too.
  test.runIf(target.name === "postgres")(
    "a row another transaction holds is left for the next flush, which records it once free (D-285)",
    async () => {
      const backfill = new StoreBackfill(store.db, silent, 60_000);
      await store.db.transaction(async (tx) => {
        await tx.execute(sql`select id from indexes where id = 'idx_b' for no key update`);
        backfill.setActive("idx_b", "0.7", 70);
        // Answers at once instead of waiting for the transaction.
        await backfill.flush();
        expect(await activeNow()).toEqual({ version: "0.5", seq: 50 });
      });
      await backfill.flush();
      expect(await activeNow()).toEqual({ version: "0.7", seq: 70 });
    },
  );

  test("an entry applied after a quiet interval is recorded at once; one within it, with the next batch (D-299)", async () => {
    const backfill = new StoreBackfill(store.db, silent, 400);
    const soon = () => new Promise((resolve) => setTimeout(resolve, 100));
    backfill.addRow(row("0.11", 11), { rewritten: ["e"], deleted: [] });
    backfill.setActive("idx_b", "0.11", 80);
    backfill.applied();
    await soon();
    expect(await activeNow()).toEqual({ version: "0.11", seq: 80 });
    expect(await versionsNow()).toContain("0.11");
    // The interval since that batch has not passed: this one waits for the timer.
    backfill.addRow(row("0.12", 12), { rewritten: ["e"], deleted: [] });
    backfill.setActive("idx_b", "0.12", 90);
    backfill.applied();
    await soon();
    expect(await activeNow()).toEqual({ version: "0.11", seq: 80 });
    expect(await versionsNow()).not.toContain("0.12");
    await expect.poll(activeNow, { timeout: 2_000 }).toEqual({ version: "0.12", seq: 90 });
    expect(await versionsNow()).toContain("0.12");
  });
});
