// The replica without NATS (docs/replication.md): two nodes over one in-memory change log and one
// store. Each entry is accepted or skipped where it is applied, the same on every node, even when
// the log lets concurrent appends through its compare-and-set (as NATS 2.9 clusters do); a node
// that lags says so and makes minVersion reads wait, then 503.
import { and, eq, sql } from "drizzle-orm";
import { describe, expect, test } from "vitest";
import { NotFoundError, QuotaExceededError, UnavailableError } from "../../src/domain/errors.ts";
import { majorOf, minorOf } from "../../src/domain/version-id.ts";
import { RegionLagService } from "../../src/services/region-lag.ts";
import type { Store } from "../../src/store/open.ts";
import { indexes, tombstones, versions } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";
import type { MemoryLog } from "./memory-log.ts";
import { admin, useTwoNodes } from "./replica-nodes.ts";

describe("two nodes on one change log", () => {
  const nodes = useTwoNodes();
  const { memory } = nodes;

  test("racing writers whose appends all pass the log get distinct versions and one order", async () => {
    // What NATS 2.9 clusters do under concurrency: the compare-and-set lets them all through.
    memory.enforceCompareAndSet = false;
    // Each node's lock on the index is held while the writes arrive, so that those after its first
    // queue behind it and go into the log together; the index is looked up beforehand, so that no
    // write waits for the store on its way (whether one arrived before another committed was
    // timing, and under a loaded machine none did).
    const id = (await nodes.a.catalog.byName("ten_r", "shop"))!.id;
    await nodes.b.catalog.byName("ten_r", "shop");
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = [nodes.a, nodes.b].map((node) => node.locks.run(id, () => gate));
    const writes = Array.from({ length: 30 }, (_, i) =>
      (i % 2 ? nodes.a : nodes.b).records
        .put(admin, "shop", `r${i}`, { title: `Record ${i}` })
        .then((version) => ({ i, version })),
    );
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await Promise.all(held);
    const done = await Promise.all(writes);
    memory.enforceCompareAndSet = true;
    expect(new Set(done.map((d) => d.version)).size).toBe(30);
    // Writes queued on a node went into the log together (group commit), and some entries were
    // overtaken and skipped, on both nodes alike, and written again.
    const appended = memory.entries.flatMap((e) =>
      e?.op === "change" ? [e.change] : e?.op === "changes" ? e.changes : [],
    );
    expect(appended.length).toBeGreaterThan(30);
    expect(memory.entries.some((e) => e?.op === "changes" && e.changes.length > 1)).toBe(true);
    const newest = done
      .map((d) => d.version)
      .sort((x, y) => Number(x.split(".")[1]) - Number(y.split(".")[1]))
      .at(-1)!;
    for (const node of [nodes.a, nodes.b]) {
      const ref = (await node.catalog.byName("ten_r", "shop"))!;
      await node.replica.waitFor(ref.id, newest, 5_000);
      expect(node.replica.active(ref.id)).toBe(newest);
      for (const { i } of done) {
        expect((await node.records.get(admin, "shop", `r${i}`))?.title).toBe(`Record ${i}`);
      }
    }
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const versionsOf = async (node: typeof nodes.a) =>
      (await node.engine.versions(ref.id)).map((v) => `${v.version}<${v.parent}`);
    expect(await versionsOf(nodes.b)).toEqual(await versionsOf(nodes.a));
  });

  test("an entry that no longer fits is skipped on every node", async () => {
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const active = nodes.a.replica.active(ref.id)!;
    const before = memory.entries.length;
    // A change built on a version that is no longer active, appended past the compare-and-set.
    await nodes.a.log.append(
      {
        op: "change",
        index: ref.id,
        node: "elsewhere",
        at: Date.now(),
        change: {
          version: "0.999",
          parent: "0.1",
          upserts: [{ id: "ghost", title: "Ghost" }],
          deletes: [],
          activate: true,
        },
      },
      undefined,
    );
    await nodes.a.replica.catchUp();
    await nodes.b.replica.catchUp();
    expect(memory.entries.length).toBe(before + 1);
    for (const node of [nodes.a, nodes.b]) {
      expect(node.replica.active(ref.id)).toBe(active);
      expect(node.replica.has(ref.id, "0.999")).toBe(false);
      await expect(node.records.get(admin, "shop", "ghost")).rejects.toThrow(/does not exist/);
    }
  });

  test("a node that lags is not caught up, and minVersion waits for it, then answers 503", async () => {
    nodes.b.log.hold();
    const version = await nodes.a.records.put(admin, "shop", "late", { title: "Late record" });
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    expect(await nodes.b.replica.caughtUp()).toMatchObject({ ready: false, behind: 1 });
    const waited = nodes.b.replica.waitFor(ref.id, version, 300);
    await expect(waited).rejects.toBeInstanceOf(UnavailableError);
    await expect(waited).rejects.toMatchObject({ retryAfterSeconds: 1 });
    const reading = nodes.b.records.get(admin, "shop", "late", undefined, version);
    setTimeout(() => nodes.b.log.release(), 100);
    expect((await reading).title).toBe("Late record");
    expect(await nodes.b.replica.caughtUp()).toMatchObject({ ready: true, behind: 0 });
  });

  test("a write or activation the other node has not applied counts as its lag once answered", async () => {
    nodes.b.log.hold();
    const lag = () => new RegionLagService(nodes.store.db, nodes.b.replica).forTenant("ten_r");
    // The nodes' store batches of the writes before are done; the next one goes at once (D-299).
    await new Promise((resolve) => setTimeout(resolve, 150));
    const version = await nodes.a.records.put(admin, "shop", "counted", { title: "Counted at once" });
    // Not after the nodes' next store batch (every 100 ms): the writer's node recorded it (D-278).
    const [shop] = await lag();
    expect(shop).toMatchObject({ indexName: "shop", behindVersions: 1 });
    expect(shop!.activeVersion).not.toBe(version);
    nodes.b.log.release();
    const shopId = (await nodes.b.catalog.byName("ten_r", "shop"))!.id;
    await nodes.b.replica.waitFor(shopId, version, 5_000);
    expect(await lag()).toEqual([{ indexName: "shop", activeVersion: version, behindVersions: 0, lagMs: 0 }]);

    // So does an activation: a roll back to the version before.
    nodes.b.log.hold();
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const before = shop!.activeVersion;
    await nodes.a.versions.activate(ref, before);
    expect(await lag()).toEqual([
      { indexName: "shop", activeVersion: version, behindVersions: 1, lagMs: expect.any(Number) },
    ]);
    nodes.b.log.release();
    await expect.poll(() => nodes.b.replica.active(shopId), { timeout: 5_000 }).toBe(before);
    expect(await lag()).toMatchObject([{ activeVersion: before, behindVersions: 0 }]);
  });
});

describe("an index deleted through another node while a request runs", () => {
  const nodes = useTwoNodes();
  const { memory } = nodes;

  test("a purge or a write to an index whose deletion another node logged meanwhile is NotFound", async () => {
    // The fuzzer against a replicating node: a purge that looked the index up as it was being
    // deleted appended "after 0" twenty times, each stale, then answered 503.
    await nodes.a.catalog.createIndex("ten_r", { name: "doomed", serviceName: "ten_r-shop" });
    await nodes.b.replica.catchUp();
    await nodes.b.records.put(admin, "doomed", "r1", { title: "Doomed" });
    const ref = (await nodes.b.catalog.byName("ten_r", "doomed"))!;
    // The deletion's log entry, applied on both nodes before its store rows are gone.
    await nodes.a.replica.commit({ op: "drop-index", index: ref.id }, { compareAndSet: false });
    await nodes.b.replica.catchUp();
    const appended = memory.entries.length;
    await expect(nodes.b.records.purge(admin, "doomed", "r1")).rejects.toBeInstanceOf(NotFoundError);
    await expect(nodes.b.records.put(admin, "doomed", "r2", { title: "Too late" })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(memory.entries.length).toBe(appended);
    // A read that waits for a version of it is NotFound too, not 503 after its wait.
    await expect(nodes.b.records.get(admin, "doomed", "r1", undefined, "0.5")).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("a record write or an activation on a node that cannot follow the log", () => {
  // Node b's end of the log (how far it goes) may time out, as NATS's does while a server is
  // killed; and b waits at most 300 ms for the log, where a node waits 15 s.
  let unanswered = false;
  const nodes = useTwoNodes(
    {},
    {
      clientWaitMs: 300,
      wrapLog: (log) => ({
        ...log,
        lastSeq: () => (unanswered ? Promise.reject(new Error("timeout")) : log.lastSeq()),
      }),
    },
  );
  const shopId = async () => (await nodes.a.catalog.byName("ten_r", "shop"))!.id;
  const refusedWith503 = async (write: Promise<unknown>) => {
    await expect(write).rejects.toBeInstanceOf(UnavailableError);
    await expect(write).rejects.toMatchObject({ retryAfterSeconds: 1 });
  };

  test("stale, while the log does not say how far it goes: 503, not a server error", async () => {
    await nodes.b.catalog.byName("ten_r", "shop");
    // b has not applied a's write: its own append is stale, and it must catch up before writing again.
    nodes.b.log.hold();
    await nodes.a.records.put(admin, "shop", "first", { title: "First" });
    unanswered = true;
    await refusedWith503(nodes.b.records.put(admin, "shop", "second", { title: "Second" }));
    unanswered = false;
    nodes.b.log.release();
    const version = await nodes.b.records.put(admin, "shop", "second", { title: "Second" });
    await nodes.a.replica.waitFor(await shopId(), version, 5_000);
    expect((await nodes.a.records.get(admin, "shop", "second")).title).toBe("Second");
    expect((await nodes.b.records.get(admin, "shop", "first")).title).toBe("First");
  });

  test("stale, while the node does not apply what the log holds: 503 once its wait is over", async () => {
    nodes.b.log.hold();
    await nodes.a.records.put(admin, "shop", "third", { title: "Third" });
    const started = Date.now();
    await refusedWith503(nodes.b.records.put(admin, "shop", "fourth", { title: "Fourth" }));
    expect(Date.now() - started).toBeLessThan(5_000);
    nodes.b.log.release();
    await nodes.b.replica.catchUp();
    expect((await nodes.b.records.get(admin, "shop", "third")).title).toBe("Third");
  });

  test("its own entry in the log but not applied here in time: 503, and applied everywhere later", async () => {
    await nodes.b.replica.catchUp();
    nodes.b.log.hold();
    const started = Date.now();
    await refusedWith503(nodes.b.records.put(admin, "shop", "fifth", { title: "Fifth" }));
    expect(Date.now() - started).toBeLessThan(5_000);
    // Not acknowledged, but in the log: every node applies it, as a write whose answer was lost.
    nodes.b.log.release();
    await nodes.b.replica.catchUp();
    await nodes.a.replica.catchUp();
    for (const node of [nodes.a, nodes.b]) expect((await node.records.get(admin, "shop", "fifth")).title).toBe("Fifth");
  });

  test("an activation asked over HTTP: 503 once its wait is over, and applied everywhere later (D-320)", async () => {
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    const older = await nodes.a.records.put(admin, "shop", "sixth", { title: "Sixth" });
    const newer = await nodes.a.records.put(admin, "shop", "seventh", { title: "Seventh" });
    await nodes.b.replica.waitFor(ref.id, newer, 5_000);
    // Its own entry is in the log, but b does not apply it: the client is answered all the same.
    nodes.b.log.hold();
    let started = Date.now();
    await refusedWith503(nodes.b.versions.activate(ref, older));
    expect(Date.now() - started).toBeLessThan(5_000);
    nodes.b.log.release();
    for (const node of [nodes.a, nodes.b]) {
      await expect.poll(() => node.replica.active(ref.id), { timeout: 5_000 }).toBe(older);
      await expect(node.records.get(admin, "shop", "seventh")).rejects.toBeInstanceOf(NotFoundError);
    }
    // Stale (a wrote meanwhile) while b cannot catch up: bounded as well.
    nodes.b.log.hold();
    const latest = await nodes.a.records.put(admin, "shop", "eighth", { title: "Eighth" });
    started = Date.now();
    await refusedWith503(nodes.b.versions.activate(ref, newer));
    expect(Date.now() - started).toBeLessThan(5_000);
    nodes.b.log.release();
    await nodes.b.replica.waitFor(ref.id, latest, 5_000);
    expect(nodes.b.replica.active(ref.id)).toBe(latest);
  });

  test("a coalesce asked over HTTP: 503 once its wait is over; applied everywhere later, its row ready (D-344)", async () => {
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    const written = await nodes.a.records.put(admin, "shop", "ninth", { title: "Ninth" });
    await nodes.b.replica.waitFor(ref.id, written, 5_000);
    // Built and published on b, its entry in the log, but b does not apply it: the client is answered.
    nodes.b.log.hold();
    const started = Date.now();
    await refusedWith503(nodes.b.versions.coalesce(ref));
    expect(Date.now() - started).toBeLessThan(5_000);
    const checkpoints = () =>
      nodes.store.db
        .select({ version: versions.version, state: versions.state })
        .from(versions)
        .where(and(eq(versions.indexId, ref.id), eq(versions.kind, "checkpoint")));
    const [made] = await checkpoints();
    // a applied it: its row, which b left pending, is ready.
    await expect.poll(checkpoints, { timeout: 5_000 }).toEqual([{ version: made!.version, state: "ready" }]);
    expect(nodes.a.replica.active(ref.id)).toBe(made!.version);
    nodes.b.log.release();
    await expect.poll(() => nodes.b.replica.active(ref.id), { timeout: 5_000 }).toBe(made!.version);
    expect((await nodes.b.records.get(admin, "shop", "ninth")).title).toBe("Ninth");
  });

  test("a purge asked over HTTP: 503 once its wait is over; erased everywhere later, with its audit (D-363)", async () => {
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    const written = await nodes.a.records.put(admin, "shop", "tenth", { title: "Tenth" });
    await nodes.b.replica.waitFor(ref.id, written, 5_000);
    // Its erasure entry is in the log, but b does not apply it: the client is answered all the same.
    nodes.b.log.hold();
    const started = Date.now();
    await refusedWith503(nodes.b.records.purge(admin, "shop", "tenth"));
    expect(Date.now() - started).toBeLessThan(5_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    nodes.b.log.release();
    // The purge goes on: erased on both nodes, and its audit version written, active everywhere.
    const audits = () =>
      nodes.store.db
        .select({ version: versions.version, recordId: versions.purgedRecordId })
        .from(versions)
        .where(and(eq(versions.indexId, ref.id), eq(versions.kind, "purge")));
    await expect.poll(async () => (await audits()).length, { timeout: 5_000 }).toBe(1);
    const [audit] = await audits();
    expect(audit!.recordId).toBe("tenth");
    for (const node of [nodes.a, nodes.b]) {
      await expect.poll(() => node.replica.active(ref.id), { timeout: 5_000 }).toBe(audit!.version);
      await expect(node.records.get(admin, "shop", "tenth")).rejects.toBeInstanceOf(NotFoundError);
    }
  });

  /**
   * An upload's activation of b's active version, which no client waits on, made while b does not
   * follow the log: its entry is in the log, and it waits until b applies it. `viaLock`: under the
   * index's lock, as versions/bulk.ts takes it.
   */
  const activationNobodyWaitsOn = async (viaLock: boolean) => {
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    await nodes.b.replica.catchUp();
    const target = nodes.b.replica.active(ref.id)!;
    nodes.b.log.hold();
    const activate = () => nodes.b.replica.commit({ op: "activate", index: ref.id, version: target });
    let settled = false;
    const done = (viaLock ? nodes.b.locks.run(ref.id, activate) : activate()).finally(() => {
      settled = true;
    });
    return { ref, target, done, settled: () => settled };
  };

  test("a write queued behind one nobody waits on: 503 once its wait is over, never written (D-346)", async () => {
    const { ref, done: holder, settled } = await activationNobodyWaitsOn(true);
    const started = Date.now();
    await refusedWith503(nodes.b.records.put(admin, "shop", "queued", { title: "Queued" }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(settled()).toBe(false);
    nodes.b.log.release();
    await holder;
    // Refused before it started: in no node's log or engine, and the next write goes through.
    await nodes.a.replica.catchUp();
    for (const node of [nodes.a, nodes.b]) {
      await expect(node.records.get(admin, "shop", "queued")).rejects.toBeInstanceOf(NotFoundError);
    }
    const version = await nodes.b.records.put(admin, "shop", "queued", { title: "Queued" });
    await nodes.a.replica.waitFor(ref.id, version, 5_000);
    expect((await nodes.a.records.get(admin, "shop", "queued")).title).toBe("Queued");
  });

  test("an activation nobody waits on (an upload's) waits past that bound until the node applies it", async () => {
    const { ref, target, done: activation, settled } = await activationNobodyWaitsOn(false);
    await new Promise((resolve) => setTimeout(resolve, 900));
    expect(settled()).toBe(false);
    nodes.b.log.release();
    await activation;
    expect(nodes.b.replica.active(ref.id)).toBe(target);
  });
});

describe("a coalesce asked over HTTP whose retention the node does not apply (D-346)", () => {
  // Node b stops following the log as it appends retention's entry, which then waits for b.
  let client: ReturnType<MemoryLog["client"]> | undefined;
  const nodes = useTwoNodes(
    {},
    {
      retainVersions: 1,
      wrapLog: (log) => {
        client = log;
        return {
          ...log,
          append: (entry, expectedLast) => {
            if (entry.op === "drop-versions") log.hold();
            return log.append(entry, expectedLast);
          },
        };
      },
    },
  );

  test("is answered once the checkpoint is live; the old versions are dropped once the node applies it", async () => {
    const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    let written = "";
    for (const id of ["one", "two", "three"]) written = await nodes.a.records.put(admin, "shop", id, { title: id });
    await nodes.b.replica.waitFor(ref.id, written, 5_000);
    const started = Date.now();
    const checkpoint = await nodes.b.versions.coalesce(ref);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(nodes.b.replica.active(ref.id)).toBe(checkpoint);
    const dropped = async () =>
      (
        await nodes.store.db
          .select({ version: versions.version })
          .from(versions)
          .where(and(eq(versions.indexId, ref.id), eq(versions.state, "dropped")))
      ).length;
    // Its retention is in the log, waiting for b.
    await expect.poll(() => nodes.memory.entries.some((e) => e?.op === "drop-versions"), { timeout: 5_000 }).toBe(true);
    expect(await dropped()).toBe(0);
    client!.release();
    await expect.poll(dropped, { timeout: 5_000 }).toBeGreaterThan(0);
    expect((await nodes.b.records.get(admin, "shop", "three")).title).toBe("three");
  });
});

describe("per-index lag before any node's store batch has the write (D-301)", () => {
  // Both nodes' batches are made rare: after the first write's, the store records nothing more.
  const nodes = useTwoNodes({ storeEveryMs: 600_000 });

  test("counts the log's newest entry of the index the node has not processed", async () => {
    const shopId = (await nodes.a.catalog.byName("ten_r", "shop"))!.id;
    const first = await nodes.a.records.put(admin, "shop", "recorded", { title: "In the store" });
    await nodes.b.replica.waitFor(shopId, first, 5_000);
    const lag = () => new RegionLagService(nodes.store.db, nodes.b.replica).forTenant("ten_r");
    const [before] = await lag();
    expect(before).toMatchObject({ behindVersions: 0, lagMs: 0 });
    nodes.b.log.hold();
    const written = Date.now();
    let version = await nodes.a.records.put(admin, "shop", "unrecorded", { title: "Not in the store yet" });
    const [shop] = await lag();
    expect(shop).toMatchObject({ indexName: "shop", activeVersion: before!.activeVersion, behindVersions: 1 });
    expect(shop!.lagMs).toBeLessThanOrEqual(Date.now() - written);
    // Each version the log holds and the node lacks counts (D-309), not only the newest entry.
    for (const id of ["two", "three", "four"]) version = await nodes.a.records.put(admin, "shop", id, { title: id });
    expect(await lag()).toMatchObject([{ activeVersion: before!.activeVersion, behindVersions: 4 }]);
    nodes.b.log.release();
    await nodes.b.replica.waitFor(shopId, version, 5_000);
    expect(await lag()).toEqual([{ indexName: "shop", activeVersion: version, behindVersions: 0, lagMs: 0 }]);
  });
});

const postgresTarget = storeTargets().find((t) => t.name === "postgres");

describe.runIf(postgresTarget)("the writer's record of the active version, on PostgreSQL", () => {
  // Row locks need a store with concurrent transactions. Node b's store batches are made rare,
  // so that only the writer's node (its batches every 300 ms) can set what GET /v1/regions counts
  // against.
  const nodes = useTwoNodes({ storeEveryMs: 300 }, { storeEveryMs: 600_000 }, postgresTarget);

  test("is made by the writer's node's next batch once another node's batch holding the row is done", async () => {
    nodes.b.log.hold();
    const id = (await nodes.a.catalog.byName("ten_r", "shop"))!.id;
    const lag = () => new RegionLagService(nodes.store.db, nodes.b.replica).forTenant("ten_r");
    const stored = async () =>
      (await nodes.store.db.select({ v: indexes.activeVersion }).from(indexes).where(eq(indexes.id, id)))[0]!.v;
    // Another node's store batch: a transaction holding the index's row (D-278 skips it).
    let locked = () => {};
    const holding = new Promise<void>((resolve) => (locked = resolve));
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const batch = nodes.store.db.transaction(async (tx) => {
      await tx.execute(sql`select 1 from ${indexes} where id = ${id} for no key update`);
      locked();
      await released;
    });
    await holding;
    const before = await stored();
    const version = await nodes.a.records.put(admin, "shop", "held", { title: "Written while held" });
    expect(await stored()).toBe(before);
    release();
    await batch;
    await expect.poll(stored, { timeout: 2_000 }).toBe(version);
    expect(await lag()).toMatchObject([{ indexName: "shop", activeVersion: before, behindVersions: 1 }]);
    nodes.b.log.release();
  });
});

describe("a writer that dies between the log and the store", () => {
  const nodes = useTwoNodes();

  test("its version row and tombstones are recorded by the nodes that applied its change", async () => {
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.a.records.put(admin, "shop", "kept", { title: "Kept" });
    await nodes.a.records.put(admin, "shop", "gone", { title: "Gone" });
    await nodes.a.records.put(admin, "shop", "back", { title: "Back" });
    await nodes.a.records.delete(admin, "shop", "back");
    const tombstonesNow = async () =>
      (await nodes.store.db.select().from(tombstones).where(eq(tombstones.indexId, ref.id)))
        .map((t) => `${t.recordId}@${t.version}`)
        .sort();
    const parent = nodes.a.replica.active(ref.id)!;
    // The writes' own rows reach the store just after their acknowledgements (D-295).
    await expect.poll(tombstonesNow).toEqual([`back@${parent}`]);
    // What a writer does before it records the change: in the log, applied. Then it is gone.
    const version = `${majorOf(parent)}.${minorOf(parent) + 1}`;
    await nodes.a.replica.commit({
      op: "change",
      index: ref.id,
      change: { version, parent, upserts: [{ id: "back", title: "Back again" }], deletes: ["gone"], activate: true },
    });
    await nodes.b.replica.waitFor(ref.id, version, 5_000);
    for (let i = 0; (await tombstonesNow()).join() !== `gone@${version}`; i++) {
      expect(i, `tombstones: ${(await tombstonesNow()).join()}`).toBeLessThan(60);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [stored] = await nodes.store.db
      .select()
      .from(versions)
      .where(and(eq(versions.indexId, ref.id), eq(versions.version, version)));
    expect(stored).toMatchObject({ parent, kind: "change", records: 2 });
    // The change itself is applied on both nodes, as before.
    expect((await nodes.b.records.get(admin, "shop", "back"))?.title).toBe("Back again");
  });

  test("an upload whose bulk entry is in the log, its version never made ready, is finished by another node (D-324)", async () => {
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const upload = async () => {
      const major = await nodes.a.versions.takeMajor(ref.id);
      await nodes.store.db.insert(versions).values({
        indexId: ref.id,
        version: String(major),
        major,
        minor: 0,
        parent: null,
        kind: "bulk",
        state: "pending",
        createdAt: Date.now(),
      });
      return major;
    };
    const startedAt = Date.now();
    const cutOff = await upload();
    const published = await upload();
    // The ingest on a: its major built and published, its bulk entry appended; then a is gone.
    const writer = await nodes.a.replicated.bulkWriter(ref.id, published);
    await writer.add([{ id: "bulk", title: "Published before its node died" }]);
    await writer.commit();

    // b tells the two apart once it has applied what the log holds.
    expect(await nodes.b.versions.bulkRecorded(ref.id, cutOff)).toBe(false);
    expect(await nodes.b.versions.bulkRecorded(ref.id, published)).toBe(true);
    await nodes.b.versions.finishBulk(ref, published, { activate: "unless-superseded", startedAt });
    const [row] = await nodes.store.db
      .select()
      .from(versions)
      .where(and(eq(versions.indexId, ref.id), eq(versions.version, String(published))));
    expect(row).toMatchObject({ state: "ready", records: 1 });
    expect(nodes.b.replica.active(ref.id)).toBe(String(published));
    await nodes.a.replica.waitFor(ref.id, String(published), 5_000);
    await expect.poll(() => nodes.a.replica.active(ref.id)).toBe(String(published));
    expect((await nodes.b.records.get(admin, "shop", "bulk"))?.title).toBe("Published before its node died");
  });
});

describe("a write's store rows after its acknowledgement (D-295)", () => {
  /** Node a's store statements (the rows, tombstones and active versions it applied) wait while held. */
  let held: Promise<void> | undefined;
  const nodes = useTwoNodes(
    {
      // Its first batch goes as its first write is applied (D-299), the next not within these tests.
      storeEveryMs: 60_000,
      wrapDb: (db) =>
        Object.assign(Object.create(db) as Store["db"], {
          execute: async (query: Parameters<Store["db"]["execute"]>[0]) => {
            await held;
            return db.execute(query);
          },
        }),
    },
    { storeEveryMs: 60_000 },
  );
  const versionsOf = async (node: "a" | "b") =>
    (await nodes[node].versions.list((await nodes[node].catalog.byName("ten_r", "shop"))!)).map((v) => v.version);

  test("a write is answered once the log has it and it is applied, while its rows still wait", async () => {
    let release = () => {};
    held = new Promise<void>((resolve) => (release = resolve));
    try {
      const version = await nodes.a.records.put(admin, "shop", "quick", { title: "Quick" });
      expect((await nodes.a.records.get(admin, "shop", "quick"))?.title).toBe("Quick");
      // A listing on the node that answered waits for the rows it has not written yet.
      let listed: string[] | undefined;
      const listing = versionsOf("a").then((v) => (listed = v));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(listed).toBeUndefined();
      release();
      await listing;
      expect(listed).toContain(version);
    } finally {
      release();
      held = undefined;
    }
  });

  test("a listing on another node that applied the write has it, its backup rows written first", async () => {
    let release = () => {};
    held = new Promise<void>((resolve) => (release = resolve));
    try {
      const version = await nodes.a.records.put(admin, "shop", "elsewhere", { title: "Elsewhere" });
      const ref = (await nodes.b.catalog.byName("ten_r", "shop"))!;
      await nodes.b.replica.waitFor(ref.id, version, 5_000);
      // The writer's node has not recorded it (held, or not due), and b's batch is not due either.
      expect(await versionsOf("b")).toContain(version);
    } finally {
      release();
      held = undefined;
    }
  });
});

describe("writes committed together (group commit)", () => {
  const nodes = useTwoNodes({ recordsPerIndex: 3 });

  test("each write of a batch is checked on top of the ones before it: quota and deletes", async () => {
    const put = (id: string) => nodes.a.records.put(admin, "shop", id, { title: `Record ${id}` });
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    /** Runs the writes while the index's lock is held, so that they queue and commit together. */
    const queued = async <T>(writes: () => Promise<T>[]) => {
      let release!: () => void;
      const held = nodes.a.locks.run(shop.id, () => new Promise<void>((resolve) => (release = resolve)));
      const settled = Promise.allSettled(writes());
      await new Promise((resolve) => setTimeout(resolve, 50));
      release();
      await held;
      return settled;
    };
    const outcomes = await queued(() => [put("r1"), put("r2"), put("r3"), put("r4"), put("r1"), put("r5")]);
    const refused = outcomes.flatMap((o, i) => (o.status === "rejected" ? [i] : []));
    expect(refused).toEqual([3, 5]);
    for (const i of refused) expect((outcomes[i] as PromiseRejectedResult).reason).toBeInstanceOf(QuotaExceededError);
    expect(nodes.memory.entries.some((e) => e?.op === "changes" && e.changes.length > 1)).toBe(true);

    // Two deletes of one record in one batch: the second finds it gone. A put after a delete in
    // the same batch fits the quota again.
    const again = await queued(() => [
      nodes.a.records.delete(admin, "shop", "r2"),
      nodes.a.records.delete(admin, "shop", "r2"),
      put("r6"),
      put("r7"),
    ]);
    expect(again.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "rejected"]);
    expect((again[1] as PromiseRejectedResult).reason).toBeInstanceOf(NotFoundError);
    expect((again[3] as PromiseRejectedResult).reason).toBeInstanceOf(QuotaExceededError);

    for (const node of [nodes.a, nodes.b]) {
      const ref = (await node.catalog.byName("ten_r", "shop"))!;
      const newest = nodes.a.replica.active(ref.id)!;
      await node.replica.waitFor(ref.id, newest, 5_000);
      const held = await Promise.all(
        ["r1", "r2", "r3", "r4", "r5", "r6", "r7"].map((id) =>
          node.records.get(admin, "shop", id).then(
            () => true,
            (error: unknown) => (error instanceof NotFoundError ? false : Promise.reject(error)),
          ),
        ),
      );
      expect(held).toEqual([true, false, true, false, false, true, false]);
    }
  });
});
