// Concurrent writers crossing the automatic checkpoint threshold each queued a full checkpoint of
// their own: 8 rebuilds of a 500k-record index for 1,020 writes (issue 15, finding 6). Now one is
// queued per index at a time, and one that finds the chain short again when its turn comes
// leaves it alone.
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { minorOf } from "../../src/domain/version-id.ts";
import { firstCheckpointAt } from "../../src/services/versions/changes.ts";
import { versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_k", tenantId: "ten_k", type: "adm", userId: null };
const THRESHOLD = 5;

describe.each(storeTargets())("automatic checkpoints on $name", (target) => {
  let services: TestServices;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_k",
      policy: { coalesceAfter: THRESHOLD, retainVersions: 1_000 },
    });
    await services.catalog.createIndex("ten_k", { name: "busy", serviceName: "ten_k-shop" });
  });
  afterAll(() => services?.close());

  test("8 writers writing at once make checkpoints only of chains as long as the threshold", async () => {
    const { store, engine, catalog, records } = services;
    // Each writer writes on as soon as its last write answered, so checkpoints queue between writes.
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 10; i++) await records.put(admin, "busy", `w${w}-${i}`, { title: `Record ${w} ${i}` });
      }),
    );
    const ref = (await catalog.byName("ten_k", "busy"))!;
    const checkpointRows = () =>
      store.db
        .select()
        .from(versionRows)
        .where(and(eq(versionRows.indexId, ref.id), eq(versionRows.kind, "checkpoint")));
    // Checkpoints are built outside the write lock (D-231): the last ones may still be building.
    await expect.poll(async () => (await checkpointRows()).filter((c) => c.state === "pending").length).toBe(0);
    const checkpoints = await checkpointRows();
    expect(checkpoints.length).toBeGreaterThan(0);
    // The index's own threshold: THRESHOLD less up to half of it, from its id (D-305).
    const first = firstCheckpointAt(ref.id, THRESHOLD);
    for (const c of checkpoints) expect(minorOf(c.parent!)).toBeGreaterThanOrEqual(first);
    expect(checkpoints.length).toBeLessThanOrEqual(80 / THRESHOLD);
    const active = (await catalog.byName("ten_k", "busy"))!.activeVersion;
    expect(await engine.count(ref.id, active)).toBe(80);
  });
});

describe.each(storeTargets())("automatic checkpoints of indexes written alike, on $name", (target) => {
  const EVERY = 40;
  let services: TestServices;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_k",
      policy: { coalesceAfter: EVERY, retainVersions: 1_000 },
    });
  });
  afterAll(() => services?.close());

  test("start at a change of their own, within the last half before SIFT_COALESCE_AFTER", async () => {
    // Written alike, they reached the threshold together and every region adopted all their
    // checkpoints at once (D-282).
    const { store, catalog, records } = services;
    const names = Array.from({ length: 8 }, (_, i) => `alike${i}`);
    for (const name of names) await catalog.createIndex("ten_k", { name, serviceName: "ten_k-shop" });
    for (let i = 0; i < EVERY; i++) {
      for (const name of names) await records.put(admin, name, `r${i}`, { title: `Record ${i}` });
    }
    const from: number[] = [];
    for (const name of names) {
      const ref = (await catalog.byName("ten_k", name))!;
      const rows = () =>
        store.db
          .select()
          .from(versionRows)
          .where(and(eq(versionRows.indexId, ref.id), eq(versionRows.kind, "checkpoint")));
      await expect.poll(async () => (await rows()).filter((c) => c.state !== "pending").length).toBe(1);
      from.push(minorOf((await rows())[0]!.parent!));
    }
    for (const minor of from) {
      expect(minor).toBeGreaterThan(EVERY - EVERY / 2);
      expect(minor).toBeLessThanOrEqual(EVERY);
    }
    expect(new Set(from).size).toBeGreaterThan(1);
  });
});

test("indexes start their checkpoints over the last half before SIFT_COALESCE_AFTER, spread evenly (D-305)", () => {
  const starts = Array.from({ length: 2_000 }, (_, i) => firstCheckpointAt(`idx_${i.toString(36)}`, 1_000));
  for (const start of starts) {
    expect(start).toBeGreaterThan(500);
    expect(start).toBeLessThanOrEqual(1_000);
  }
  // Half of them in the earlier half of that range: written alike, they checkpoint over it.
  const early = starts.filter((s) => s <= 750).length;
  expect(early).toBeGreaterThan(800);
  expect(early).toBeLessThan(1_200);
});
