// The replica without NATS (docs/replication.md): two nodes over one in-memory change log and one
// store. Each entry is accepted or skipped where it is applied, the same on every node, even when
// the log lets concurrent appends through its compare-and-set (as NATS 2.9 clusters do); a node
// that lags says so and makes minVersion reads wait, then 503.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { and, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { NotFoundError, QuotaExceededError, UnavailableError } from "../../src/domain/errors.ts";
import { majorOf, minorOf } from "../../src/domain/version-id.ts";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import { createLogger } from "../../src/log.ts";
import { Replica } from "../../src/replication/replica.ts";
import { within } from "../../src/within.ts";
import { replicatedEngine } from "../../src/replication/replicated-engine.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { RecordService } from "../../src/services/records.ts";
import { RegionLagService } from "../../src/services/region-lag.ts";
import { VersionService } from "../../src/services/versions.ts";
import { IndexLocks } from "../../src/services/versions/lock.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { NotAppendedError } from "../../src/ports/change-log.ts";
import type { SnapshotManifest } from "../../src/replication/snapshots.ts";
import type { Store } from "../../src/store/open.ts";
import { indexes, tenants, tombstones, versions } from "../../src/store/schema.ts";
import { type StoreTarget, storeTargets } from "../support/store.ts";
import { MemoryLog } from "./memory-log.ts";

const admin: Principal = { kind: "key", keyId: "key_r", tenantId: "ten_r", type: "adm", userId: null };
const silent = createLogger("silent", {}, () => {});

/** How a node is opened: its snapshots, its quota, its engine wrapped (to hold a build). */
interface NodeOptions {
  snapshots?: { every: number; goneAfterMs: number; afterMs?: number };
  recordsPerIndex?: number;
  coalesceAfter?: number;
  /** Ready versions retention keeps besides the active one's chain (100). */
  retainVersions?: number;
  /** Wraps the node's own engine (to hold a checkpoint's build). */
  wrap?: (engine: SearchEngine) => SearchEngine;
  /** Wraps the node's client of the log (to put the log's home out of reach). */
  wrapLog?: (log: ReturnType<MemoryLog["client"]>) => ReturnType<MemoryLog["client"]>;
  /** Leaves `replica.start()` to the test. */
  startLater?: boolean;
  /** How often the node records what it applied in the store (100 ms). */
  storeEveryMs?: number;
  /** How long a record write or an activation asked over HTTP waits for the node to apply the log (15 s). */
  clientWaitMs?: number;
  /** Wraps the node's store, where it records the rows of what it applies (to hold those statements). */
  wrapDb?: (db: Store["db"]) => Store["db"];
  /** When the node's checkpoints are layered (engine/embedded/versions/layers.ts). */
  layering?: { minBase: number; maxShare: number };
  /** How often the node checks that the log still holds each index's history (10 minutes, D-369). */
  historyCheckMs?: number;
  /** How long a record write the log turns away unstored is sent again (10 s, D-372). */
  notAppendedRetryMs?: number;
  /** How long an entry may fail before its index is set aside on the node (2 minutes, D-376). */
  setAsideAfterMs?: number;
}

async function openNode(memory: MemoryLog, store: Store, name: string, options: NodeOptions = {}) {
  const { snapshots, recordsPerIndex, wrap = (engine) => engine } = options;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sift-replica-${name}-`));
  const real = createEmbeddedEngine({
    dataDir: path.join(dir, "engine"),
    ...(options.layering ? { layering: options.layering } : {}),
  });
  await real.open();
  const inner = wrap(real);
  const log = (options.wrapLog ?? ((client) => client))(memory.client());
  const db = options.wrapDb?.(store.db) ?? store.db;
  const replica = new Replica({
    node: name,
    log,
    engine: inner,
    db,
    logger: silent,
    dataDir: dir,
    ...(snapshots ? { snapshots } : {}),
    ...(options.storeEveryMs ? { storeEveryMs: options.storeEveryMs } : {}),
    ...(options.clientWaitMs ? { clientWaitMs: options.clientWaitMs } : {}),
    ...(options.historyCheckMs ? { historyCheckMs: options.historyCheckMs } : {}),
    ...(options.notAppendedRetryMs ? { notAppendedRetryMs: options.notAppendedRetryMs } : {}),
    ...(options.setAsideAfterMs ? { setAsideAfterMs: options.setAsideAfterMs } : {}),
  });
  const engine = replicatedEngine(inner, replica, log);
  const locks = new IndexLocks();
  locks.setCatchUp((clientWaits) => replica.catchUp({ clientWaits }), { clientWaitMs: replica.clientWaitMs });
  const catalog = new CatalogService(store.db, engine, silent);
  replica.onActivated((id, version) => catalog.setActive(id, version));
  catalog.useLocalActive((id) => replica.active(id));
  const versions = new VersionService({
    db,
    engine,
    catalog,
    log: silent,
    locks,
    replica,
    policy: {
      coalesceAfter: options.coalesceAfter ?? 1_000,
      retainVersions: options.retainVersions ?? 100,
      ...(recordsPerIndex ? { recordsPerIndex } : {}),
    },
  });
  const records = new RecordService({ catalog, versions, engine });
  if (!options.startLater) await replica.start();
  return {
    log,
    locks,
    replica,
    catalog,
    versions,
    records,
    engine: inner,
    /** What the services write through: the node's engine behind the log. */
    replicated: engine,
    async close() {
      await replica.stop();
      await real.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Two nodes "a" and "b" over one in-memory log and one store, with index "shop" made through a:
 * opened before the describe block's tests, closed after them.
 */
function useTwoNodes(
  options: NodeOptions = {},
  optionsB: NodeOptions = { ...options, wrap: undefined },
  target: StoreTarget = storeTargets()[0]!,
) {
  const memory = new MemoryLog();
  const nodes = { memory } as {
    memory: MemoryLog;
    store: Store;
    a: Awaited<ReturnType<typeof openNode>>;
    b: Awaited<ReturnType<typeof openNode>>;
  };
  let store: Store | undefined;
  beforeAll(async () => {
    store = await target.open();
    nodes.store = store;
    await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
    nodes.a = await openNode(memory, store, "a", options);
    nodes.b = await openNode(memory, store, "b", optionsB);
    await nodes.a.catalog.createService("ten_r", { name: "ten_r-shop", regions: ["frankfurt"] });
    const shop = await nodes.a.catalog.createIndex("ten_r", { name: "shop", serviceName: "ten_r-shop" });
    // Node b applies the index's creation from the log: a write to it there before then is 503
    // ("not received yet"), as a loaded CI machine once showed.
    const { id } = (await nodes.a.catalog.byName("ten_r", shop.name))!;
    await nodes.b.replica.waitFor(id, "0", 10_000);
  });
  afterAll(async () => {
    await nodes.a?.close();
    await nodes.b?.close();
    await store?.close();
  });
  return nodes;
}

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

describe("a node that missed entries removed from the log", () => {
  // A snapshot every 5 entries of an index; positions are not what lets the removal through
  // here: the test removes the entries itself, as truncation would behind a node it took for gone.
  const nodes = useTwoNodes({ snapshots: { every: 5, goneAfterMs: 60_000 } });
  const { memory } = nodes;

  test("restores the index from its snapshot when an entry builds on ones it never applied", async () => {
    const first = await nodes.a.records.put(admin, "shop", "early", { title: "Early record" });
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.b.replica.waitFor(ref.id, first, 5_000);
    nodes.b.log.hold();
    const written = new Map<string, string>();
    for (let i = 0; i < 12; i++) {
      await nodes.a.records.put(admin, "shop", `away-${i}`, { title: `Away ${i}` });
      written.set(`away-${i}`, `Away ${i}`);
    }
    const pointer = await waitForPointer(memory, ref.id);
    // Removed before b applied them, as a truncation that no longer counted b would (it keeps
    // the snapshot's own entry).
    memory.entries.forEach((e, i) => {
      if (e?.index === ref.id && i + 1 < pointer.seq) memory.entries[i] = null;
    });
    const last = await nodes.a.records.put(admin, "shop", "last", { title: "Last record" });
    written.set("last", "Last record");
    nodes.b.log.release();
    await nodes.b.replica.waitFor(ref.id, last, 5_000);
    for (const [id, title] of written) expect((await nodes.b.records.get(admin, "shop", id))?.title).toBe(title);
    expect((await nodes.b.records.get(admin, "shop", "early"))?.title).toBe("Early record");
  });
});

describe("a log that lost every entry of an index (D-369)", () => {
  // No periodic look during the test: the write itself finds the loss.
  const nodes = useTwoNodes({ historyCheckMs: 3_600_000 });
  const { memory } = nodes;

  test("a write is refused with 503 while a node repairs it, then goes through; a node added later holds it all", async () => {
    const written = new Map<string, string>();
    let version = "";
    for (let i = 0; i < 3; i++) {
      version = await nodes.a.records.put(admin, "shop", `kept-${i}`, { title: `Kept ${i}` });
      written.set(`kept-${i}`, `Kept ${i}`);
    }
    const { id } = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.b.replica.waitFor(id, version, 5_000);
    // Gone from the log some other way than a truncation: no snapshot holds them.
    memory.entries.forEach((e, i) => {
      if (e?.index === id) memory.entries[i] = null;
    });
    expect(memory.docs.has(`snapshots/${id}/latest`)).toBe(false);

    // Before the repair, such a write was stale 20 times over: "written from other regions".
    const refused = await nodes.a.records.put(admin, "shop", "after", { title: "After" }).catch((e: Error) => e);
    expect(refused).toBeInstanceOf(UnavailableError);
    expect((refused as Error).message).toMatch(/change log lost this index's newest entries/);
    let after = "";
    await expect
      .poll(
        async () => (after = await nodes.a.records.put(admin, "shop", "after", { title: "After" }).catch(() => "")),
        {
          timeout: 10_000,
          interval: 200,
        },
      )
      .not.toBe("");
    written.set("after", "After");
    expect(memory.docs.has(`snapshots/${id}/latest`)).toBe(true);
    await nodes.b.replica.waitFor(id, after, 5_000);
    expect((await nodes.b.records.get(admin, "shop", "after"))?.title).toBe("After");

    const c = await openNode(memory, nodes.store, "c");
    try {
      await c.replica.waitFor(id, after, 10_000);
      for (const [record, title] of written) expect((await c.records.get(admin, "shop", record))?.title).toBe(title);
    } finally {
      await c.close();
    }
  });
});

describe("a log without a leader for a moment (D-372)", () => {
  /** Until then, every append is turned away unstored, as NATS does while it elects a stream's leader. */
  let leaderlessUntil = 0;
  let turnedAway = 0;
  const nodes = useTwoNodes({
    notAppendedRetryMs: 3_000,
    wrapLog: (log) => ({
      ...log,
      append: async (...args: Parameters<typeof log.append>) => {
        if (Date.now() < leaderlessUntil) {
          turnedAway++;
          throw new NotAppendedError("jetstream is not enabled");
        }
        return log.append(...args);
      },
    }),
  });

  test("a record write it turns away unstored is sent again, and made once, when a leader is back", async () => {
    leaderlessUntil = Date.now() + 1_500;
    const started = Date.now();
    const version = await nodes.a.records.put(admin, "shop", "elected", { title: "After the election" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(turnedAway).toBeGreaterThan(1);
    const { id } = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.b.replica.waitFor(id, version, 5_000);
    expect((await nodes.b.records.get(admin, "shop", "elected"))?.title).toBe("After the election");
    // Made once: one version, one entry in the log.
    const changes = memory().entries.flatMap((e) =>
      e?.index !== id ? [] : e.op === "change" ? [e.change] : e.op === "changes" ? e.changes : [],
    );
    expect(changes.filter((c) => c.upserts.some((r) => r.id === "elected"))).toHaveLength(1);
  });

  test("one still turned away after its 10 s (3 here) is refused with 503, not made", async () => {
    leaderlessUntil = Date.now() + 60_000;
    const refused = await nodes.a.records.put(admin, "shop", "never", { title: "Never" }).catch((e: Error) => e);
    leaderlessUntil = 0;
    expect(refused).toBeInstanceOf(UnavailableError);
    expect((refused as Error).message).toMatch(/no leader for a while; this write was not made/);
    await expect(nodes.a.records.get(admin, "shop", "never")).rejects.toBeInstanceOf(NotFoundError);
  });

  const memory = () => nodes.memory;
});

describe("a log that lost the newest entries of an index, applied on one node only (D-369)", () => {
  const nodes = useTwoNodes({ historyCheckMs: 3_600_000 });
  const { memory } = nodes;

  test("both nodes end with the copy of the node that repaired it, and write on from there", async () => {
    const first = await nodes.a.records.put(admin, "shop", "both", { title: "On both" });
    const { id } = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.b.replica.waitFor(id, first, 5_000);
    nodes.a.log.hold();
    const onB = await nodes.b.records.put(admin, "shop", "only-b", { title: "Only on b" });
    memory.entries.forEach((e, i) => {
      if (e?.index === id) memory.entries[i] = null;
    });
    nodes.a.log.release();

    // a finds the loss at its write and repairs the index from what it holds.
    const refused = await nodes.a.records.put(admin, "shop", "next", { title: "Next" }).catch((e: Error) => e);
    expect(refused).toBeInstanceOf(UnavailableError);
    let next = "";
    await expect
      .poll(async () => (next = await nodes.a.records.put(admin, "shop", "next", { title: "Next" }).catch(() => "")), {
        timeout: 10_000,
        interval: 200,
      })
      .not.toBe("");
    await nodes.b.replica.waitFor(id, next, 5_000);
    for (const node of [nodes.a, nodes.b]) {
      expect((await node.records.get(admin, "shop", "both"))?.title).toBe("On both");
      expect((await node.records.get(admin, "shop", "next"))?.title).toBe("Next");
      // The log lost it: no node that starts later could have it, so b gives it up too.
      await expect(node.records.get(admin, "shop", "only-b")).rejects.toBeInstanceOf(NotFoundError);
    }
    // The same version id, now made by a's write: one order everywhere.
    expect(onB).toBe(next);
  });
});

describe("a log that lost the oldest entries of an index (D-369)", () => {
  const nodes = useTwoNodes({ historyCheckMs: 300 });
  const { memory } = nodes;

  test("is repaired by a node that holds the index; a node added later restores it from the snapshot", async () => {
    const shop = await writeShop(nodes.a, 4);
    const { id } = shop;
    await nodes.b.replica.waitFor(id, shop.version, 5_000);
    // The index's creation and first two writes gone; the newest two stay.
    const own = memory.entries.flatMap((e, i) => (e?.index === id ? [i] : []));
    for (const i of own.slice(0, 3)) memory.entries[i] = null;

    // Before the repair a node added now stayed without the index ("builds on entries it never applied").
    const pointer = await waitForPointer(memory, id);
    expect(pointer.seq).toBeGreaterThanOrEqual(own.at(-1)! + 1);
    const c = await openNode(memory, nodes.store, "c");
    try {
      // And the index goes on being written everywhere.
      await holdsAllAndFollows(c, nodes.a, shop, 10_000);
    } finally {
      await c.close();
    }
  });
});

describe("a log that lost entries in the middle of an index's history (D-374)", () => {
  // No periodic look: only the added node's notice can find a hole whose both ends are kept.
  const nodes = useTwoNodes({ historyCheckMs: 3_600_000 });
  const { memory } = nodes;

  test("a node added later that meets the hole gets the index from a node that holds it", async () => {
    const shop = await writeShop(nodes.a, 6);
    const { id } = shop;
    await nodes.b.replica.waitFor(id, shop.version, 5_000);
    // The creation, the first two writes and the last two stay; the two between are gone.
    memory.loseEntries(id, 3, 5);
    expect(memory.docs.has(`snapshots/${id}/latest`)).toBe(false);

    // Before, c stayed at "r-1" for ever: the holders looked at the ends, found them whole.
    const c = await openNode(memory, nodes.store, "c", { historyCheckMs: 3_600_000 });
    try {
      await holdsAllAndFollows(c, nodes.a, shop, 15_000);
    } finally {
      await c.close();
    }
  });
});

describe("a hole in an index's history that no node can fill (D-374, D-376)", () => {
  test("a node added later sets that index aside, and starts, and serves the others", async () => {
    const store = await storeTargets()[0]!.open();
    const memory = new MemoryLog();
    const quiet: NodeOptions = { historyCheckMs: 3_600_000 };
    let c: TestNode | undefined;
    try {
      const a = await openShopNode(memory, store, quiet);
      await a.catalog.createIndex("ten_r", { name: "desk", serviceName: "ten_r-shop" });
      const shop = await writeShop(a, 6);
      await a.records.put(admin, "desk", "lamp", { title: "Desk lamp" });
      await a.close();
      // Two writes in the middle gone, and the only node that held them gone too.
      memory.loseEntries(shop.id, 3, 5);

      // Before, its start never ended: every entry after the hole waited behind it.
      c = await openNode(memory, store, "c", { ...quiet, setAsideAfterMs: 500 });
      expect((await c.replica.caughtUp()).ready).toBe(true);
      expect((await c.records.get(admin, "desk", "lamp"))?.title).toBe("Desk lamp");
      // No node can say what the hole held: the index is not served from what came before it.
      await expect(c.records.get(admin, "shop", "r-0")).rejects.toBeInstanceOf(UnavailableError);
      // Listed all the same, as the shared store knows it: before, the whole list was 503 here.
      const listed = await c.catalog.listIndexes("ten_r");
      expect(listed.map((i) => [i.name, i.activeVersion, i.records])).toEqual([
        ["desk", "0.1", 1],
        ["shop", shop.version, 6],
      ]);
      // An active version whose row has no count yet (a checkpoint's until it is built): the
      // newest count before it, not 0.
      await store.db
        .update(versions)
        .set({ records: null })
        .where(and(eq(versions.indexId, shop.id), eq(versions.version, shop.version)));
      const shopListed = (await c.catalog.listIndexes("ten_r")).find((i) => i.name === "shop");
      expect([shopListed?.activeVersion, shopListed?.records]).toEqual([shop.version, 5]);
    } finally {
      await c?.close();
      await store.close();
    }
  });
});

describe("a small index's entries no snapshot held for a while (D-375)", () => {
  test("get a snapshot, from which a node added after the log lost them all, and no node held it, restores it", async () => {
    const store = await storeTargets()[0]!.open();
    const memory = new MemoryLog();
    // Far below the 10,000 entries of a snapshot by count; snapshotted once half a second old.
    const options: NodeOptions = {
      historyCheckMs: 200,
      snapshots: { every: 10_000, goneAfterMs: 60_000, afterMs: 500 },
    };
    let c: TestNode | undefined;
    try {
      const a = await openShopNode(memory, store, options);
      const { id } = (await a.catalog.byName("ten_r", "shop"))!;
      let version = "";
      for (let i = 0; i < 3; i++) version = await a.records.put(admin, "shop", `r-${i}`, { title: `Record ${i}` });
      const newest = memory.entries.reduce((at, e, i) => (e?.index === id ? i + 1 : at), 0);
      await expect
        .poll(() => (memory.docs.get(`snapshots/${id}/latest`) as { seq: number } | undefined)?.seq ?? 0, {
          timeout: 5_000,
        })
        .toBeGreaterThanOrEqual(newest);
      await a.close();
      // Every entry of the index gone from the log, and the only node that held it gone too.
      memory.loseEntries(id);

      c = await openNode(memory, store, "c", options);
      // The first read finds the index missing here (503, "not received yet"), and restores it.
      await expect
        .poll(() => c!.records.get(admin, "shop", "r-0").catch((e: Error) => e.message), { timeout: 10_000 })
        .toMatchObject({ title: "Record 0" });
      await c.replica.waitFor(id, version, 1_000);
      for (let i = 0; i < 3; i++) expect((await c.records.get(admin, "shop", `r-${i}`))?.title).toBe(`Record ${i}`);
      // And it takes writes again (its next compare-and-set is repaired as in D-369).
      await expect
        .poll(() => c!.records.put(admin, "shop", "next", { title: "Next" }).catch(() => ""), {
          timeout: 10_000,
          interval: 200,
        })
        .not.toBe("");
    } finally {
      await c?.close();
      await store.close();
    }
  });
});

describe("an entry a node cannot apply for minutes (D-376)", () => {
  /** While set, node b's engine refuses every change to "shop" (a disk that refuses its files, say). */
  let refusing = false;
  const nodes = useTwoNodes(
    { historyCheckMs: 3_600_000 },
    {
      historyCheckMs: 3_600_000,
      setAsideAfterMs: 500,
      wrap: (real) =>
        Object.assign(Object.create(real) as SearchEngine, {
          applyChange: async (...args: Parameters<SearchEngine["applyChange"]>) => {
            if (refusing && args[0] === shopId) throw new Error("no space left on device");
            return real.applyChange(...args);
          },
          applyChanges: async (...args: Parameters<NonNullable<SearchEngine["applyChanges"]>>) => {
            if (refusing && args[0] === shopId) throw new Error("no space left on device");
            return real.applyChanges!(...args);
          },
        }),
    },
  );
  let shopId = "";

  test("sets its index aside there: the node serves the others and is ready, then brings it back", async () => {
    shopId = (await nodes.a.catalog.byName("ten_r", "shop"))!.id;
    const first = await nodes.a.records.put(admin, "shop", "first", { title: "First" });
    await nodes.b.replica.waitFor(shopId, first, 5_000);
    await nodes.a.catalog.createIndex("ten_r", { name: "desk", serviceName: "ten_r-shop" });

    refusing = true;
    const refused = await nodes.a.records.put(admin, "shop", "refused", { title: "Refused on b" });
    const later = await nodes.a.records.put(admin, "shop", "later", { title: "Later" });
    // Before, b held every later entry of every index back behind it: never caught up again.
    await expect.poll(async () => (await nodes.b.replica.caughtUp()).ready, { timeout: 5_000 }).toBe(true);
    const desk = await nodes.a.records.put(admin, "desk", "lamp", { title: "Desk lamp" });
    const deskId = (await nodes.a.catalog.byName("ten_r", "desk"))!.id;
    await nodes.b.replica.waitFor(deskId, desk, 5_000);
    expect((await nodes.b.records.get(admin, "desk", "lamp"))?.title).toBe("Desk lamp");
    // What b holds of "shop" is behind the log: not served there, not even what it had.
    await expect(nodes.b.records.get(admin, "shop", "first")).rejects.toBeInstanceOf(UnavailableError);
    expect((await nodes.a.records.get(admin, "shop", "later"))?.title).toBe("Later");

    // The disk is back, while "shop" is written on: b applies what it passed over (read again
    // from the log) and then follows the writes as they come.
    refusing = false;
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        await nodes.a.records.put(admin, "shop", `w-${written}`, { title: `Write ${written}` });
        written++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await expect
        .poll(() => nodes.b.records.get(admin, "shop", "later").catch((e: Error) => e.message), { timeout: 15_000 })
        .toMatchObject({ title: "Later" });
    } finally {
      writing = false;
      await writer;
    }
    expect((await nodes.b.records.get(admin, "shop", "refused"))?.title).toBe("Refused on b");
    await nodes.b.replica.waitFor(shopId, later, 1_000);
    expect(refused).not.toBe(later);
    const next = await nodes.a.records.put(admin, "shop", "next", { title: "Next" });
    await nodes.b.replica.waitFor(shopId, next, 5_000);
    expect(written).toBeGreaterThan(0);
    for (const id of ["next", `w-${written - 1}`, "w-0"])
      expect(await nodes.b.records.get(admin, "shop", id)).toBeTruthy();
  });
});

describe("a node started while the log's home is out of reach (D-279)", () => {
  const nodes = useTwoNodes({ snapshots: { every: 5, goneAfterMs: 60_000 } });
  const { memory } = nodes;

  test("follows its region's end of the log; an index truncated past it waits for its snapshot", async () => {
    // "desk" keeps every entry; "shop" loses the ones before its snapshot, as a truncation that
    // no longer counted the new node would.
    await nodes.a.catalog.createIndex("ten_r", { name: "desk", serviceName: "ten_r-shop" });
    const desk = await nodes.a.records.put(admin, "desk", "lamp", { title: "Desk lamp" });
    let shopVersion = "";
    for (let i = 0; i < 12; i++)
      shopVersion = await nodes.a.records.put(admin, "shop", `s-${i}`, { title: `Shop ${i}` });
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const deskRef = (await nodes.a.catalog.byName("ten_r", "desk"))!;
    const pointer = await waitForPointer(memory, shop.id);
    memory.entries.forEach((e, i) => {
      if (e?.index === shop.id && i + 1 < pointer.seq) memory.entries[i] = null;
    });
    shopVersion = await nodes.a.records.put(admin, "shop", "last", { title: "Last" });

    // The home is down: its end, its documents (pointers, positions) do not answer; the mirror does.
    let homeDown = true;
    const home = <T>(call: () => Promise<T>) => (homeDown ? Promise.reject(new Error("no responders")) : call());
    const c = await openNode(memory, nodes.store, "c", {
      snapshots: { every: 5, goneAfterMs: 60_000 },
      startLater: true,
      wrapLog: (log) => ({
        ...log,
        lastSeq: () => home(() => log.lastSeq()),
        lastSeqNearby: () => log.lastSeq(),
        getDoc: <T>(name: string) => home(() => log.getDoc<T>(name)),
        listDocs: (prefix: string) => home(() => log.listDocs(prefix)),
        putDoc: (name: string, value: unknown) => home(() => log.putDoc(name, value)),
      }),
    });
    try {
      const started = c.replica.start();
      // The index with every entry is applied; the one truncated past it waits for the home.
      await c.replica.waitFor(deskRef.id, desk, 5_000);
      expect(c.replica.has(shop.id, shopVersion)).toBe(false);
      expect(await c.replica.caughtUp()).toMatchObject({ ready: false });
      homeDown = false;
      await c.replica.waitFor(shop.id, shopVersion, 15_000);
      await started;
      for (let i = 0; i < 12; i++) expect((await c.records.get(admin, "shop", `s-${i}`))?.title).toBe(`Shop ${i}`);
      expect((await c.records.get(admin, "desk", "lamp"))?.title).toBe("Desk lamp");
    } finally {
      await c.close();
    }
  }, 30_000);
});

describe("a node whose log opened while its home was out of reach (D-337)", () => {
  const nodes = useTwoNodes();
  const { memory } = nodes;

  /** Node "c" on a log whose home does not answer: its position report never ends, its end fails. */
  const openAway = (homeAway: boolean) =>
    openNode(memory, nodes.store, `c-${homeAway}`, {
      startLater: true,
      wrapLog: (log) => ({
        ...log,
        homeAway: async () => homeAway,
        lastSeq: () => Promise.reject(new Error("timeout")),
        lastSeqNearby: () => log.lastSeq(),
        putDoc: () => new Promise<void>(() => undefined),
      }),
    });
  const settledWithin = (promise: Promise<unknown>, ms: number) =>
    Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), ms))]);

  test("starts on what its region holds without waiting for its first position report", async () => {
    const version = await nodes.a.records.put(admin, "shop", "lamp", { title: "Away lamp" });
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const c = await openAway(true);
    try {
      expect(await settledWithin(c.replica.start(), 5_000)).toBe(true);
      await c.replica.waitFor(shop.id, version, 5_000);
    } finally {
      await c.close();
    }
  });

  test("with its home answering at the open, reports its position before it reads anything", async () => {
    const c = await openAway(false);
    try {
      expect(await settledWithin(c.replica.start(), 1_000)).toBe(false);
    } finally {
      await c.close();
    }
  });
});

describe("a snapshot being written", () => {
  // Its majors' files are published as a snapshot's own (none counts as published already), and
  // that publishing waits until the test lets it go.
  let letGo = () => {};
  const publishing = new Promise<void>((resolve) => (letGo = resolve));
  let started = () => {};
  const publishingStarted = new Promise<void>((resolve) => (started = resolve));
  const nodes = useTwoNodes(
    {
      snapshots: { every: 5, goneAfterMs: 60_000 },
      coalesceAfter: 3,
      wrapLog: (log) => ({
        ...log,
        hasFiles: async () => false,
        putFiles: async (name, files, options) => {
          if (name.startsWith("snapshots/")) {
            started();
            await publishing;
          }
          return log.putFiles(name, files, options);
        },
      }),
    },
    { snapshots: { every: 5, goneAfterMs: 60_000 }, coalesceAfter: 3 },
  );
  const { memory } = nodes;

  test("does not hold the index's later writes on the node writing it", async () => {
    for (let i = 0; i < 8; i++) await nodes.a.records.put(admin, "shop", `s-${i}`, { title: `Shop ${i}` });
    await publishingStarted;
    const ref = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    try {
      // Acknowledged only once applied here: it would wait for the publishing if that held the index.
      const later = await within(
        3_000,
        "a write while a snapshot is published",
        nodes.a.records.put(admin, "shop", "later", { title: "Later" }),
      );
      expect((await nodes.a.records.get(admin, "shop", "later"))?.title).toBe("Later");
      await nodes.b.replica.waitFor(ref.id, later, 5_000);
    } finally {
      letGo();
    }
    const pointer = (await waitForPointer(memory, ref.id)) as { seq: number; manifest: string };
    const manifest = memory.docs.get(pointer.manifest) as SnapshotManifest;
    // Read before the later write was applied: it holds what came before, and not that write.
    expect(manifest.majors.length).toBeGreaterThan(0);
    expect(manifest.majors.every((m) => m.files.startsWith(`snapshots/${ref.id}/${pointer.seq}/`))).toBe(true);
    const held = manifest.changes.flatMap((c) => c.upserts.map((r) => r.id));
    expect(held).not.toContain("later");
  });
});

/** The newest snapshot pointer of an index, once a snapshot was taken and its pointer written. */
type TestNode = Awaited<ReturnType<typeof openNode>>;

/** Node "a" alone on `memory`: tenant ten_r, its service and index "shop" made through it. */
async function openShopNode(memory: MemoryLog, store: Store, options: NodeOptions): Promise<TestNode> {
  await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
  const a = await openNode(memory, store, "a", options);
  await a.catalog.createService("ten_r", { name: "ten_r-shop", regions: ["frankfurt"] });
  await a.catalog.createIndex("ten_r", { name: "shop", serviceName: "ten_r-shop" });
  return a;
}

/** `count` records written through `node` into "shop": their titles by id, the newest version, the index's id. */
async function writeShop(node: TestNode, count: number) {
  const written = new Map<string, string>();
  let version = "";
  for (let i = 0; i < count; i++) {
    version = await node.records.put(admin, "shop", `r-${i}`, { title: `Record ${i}` });
    written.set(`r-${i}`, `Record ${i}`);
  }
  const { id } = (await node.catalog.byName("ten_r", "shop"))!;
  return { written, version, id };
}

/** `node` holds every record of `written` at `version`, and follows the next write made through `writer`. */
async function holdsAllAndFollows(
  node: TestNode,
  writer: TestNode,
  shop: { written: Map<string, string>; version: string; id: string },
  waitMs: number,
): Promise<void> {
  await node.replica.waitFor(shop.id, shop.version, waitMs);
  for (const [record, title] of shop.written)
    expect((await node.records.get(admin, "shop", record))?.title).toBe(title);
  const next = await writer.records.put(admin, "shop", "next", { title: "Next" });
  await node.replica.waitFor(shop.id, next, 5_000);
  expect((await node.records.get(admin, "shop", "next"))?.title).toBe("Next");
}

async function waitForPointer(memory: MemoryLog, indexId: string): Promise<{ seq: number }> {
  for (let i = 0; i < 100; i++) {
    const pointer = memory.docs.get(`snapshots/${indexId}/latest`) as { seq: number } | undefined;
    if (pointer) return pointer;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("no snapshot was taken");
}

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

describe("a checkpoint built while both nodes write", () => {
  const held = { entered: Promise.withResolvers<void>(), release: Promise.withResolvers<void>() };
  // Node a's engine holds its next checkpoint build until the test lets it go.
  const nodes = useTwoNodes({
    wrap: (real) =>
      Object.assign(Object.create(real) as SearchEngine, {
        checkpoint: async (...args: Parameters<SearchEngine["checkpoint"]>) => {
          held.entered.resolve();
          await held.release.promise;
          return real.checkpoint(...args);
        },
      }),
  });

  test("is built once, and adopted everywhere with the writes made meanwhile carried onto it", async () => {
    const put = (node: typeof nodes.a, id: string) => node.records.put(admin, "shop", id, { title: `Record ${id}` });
    await put(nodes.a, "x1");
    const from = await put(nodes.b, "x2");
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    await nodes.a.replica.waitFor(shop.id, from, 5_000);
    const coalescing = nodes.a.versions.coalesce(shop);
    await held.entered.promise;
    // Both nodes write while a builds: neither waits for it.
    await put(nodes.b, "y1");
    await nodes.b.records.delete(admin, "shop", "x1");
    await put(nodes.a, "y2");
    held.release.resolve();
    const checkpoint = await coalescing;

    const entry = nodes.memory.entries.find((e) => e?.op === "checkpoint");
    expect(entry).toMatchObject({ op: "checkpoint", from, files: `segments/${shop.id}/${checkpoint}` });
    const carried = `${checkpoint}.1`;
    for (const node of [nodes.a, nodes.b]) {
      await node.replica.waitFor(shop.id, carried, 5_000);
      expect(node.replica.active(shop.id)).toBe(carried);
      const held = await Promise.all(
        ["x1", "x2", "y1", "y2"].map((id) =>
          node.records.get(admin, "shop", id).then(
            () => true,
            (error: unknown) => (error instanceof NotFoundError ? false : Promise.reject(error)),
          ),
        ),
      );
      expect(held).toEqual([false, true, true, true]);
      expect(await node.engine.count(shop.id, checkpoint)).toBe(2);
    }
    const versionsOf = async (node: typeof nodes.a) =>
      (await node.engine.versions(shop.id)).map((v) => `${v.version}<${v.parent}`);
    expect(await versionsOf(nodes.b)).toEqual(await versionsOf(nodes.a));
    expect(await versionsOf(nodes.a)).toContain(`${checkpoint}<${from}`);
    // A write on either node builds on the carried version.
    expect(await put(nodes.b, "z1")).toBe(`${checkpoint}.2`);
  });
});

/** A node's engine's search for "record" in `version`, up to 20 hits (what the layered checkpoint tests compare). */
const searchRecords = (node: { engine: SearchEngine }, index: string, version: string) =>
  node.engine.search(index, version, { query: "record", scope: "all", weighted: true, limit: 20 });

describe("a layered checkpoint (D-351)", () => {
  const layering = { minBase: 1, maxShare: 0.5 };
  const nodes = useTwoNodes({ layering });

  test("is published without its base's files, and served alike by the node that did not build it", async () => {
    const put = (node: typeof nodes.a, id: string, title = `Record ${id}`) =>
      node.records.put(admin, "shop", id, { title });
    for (let i = 0; i < 12; i++) await put(i % 2 ? nodes.a : nodes.b, `r${i}`);
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    // The first checkpoint is one segment (its source, the empty upload, has nothing to keep).
    const first = await nodes.a.versions.coalesce(shop);
    await put(nodes.b, "r3", "Changed record");
    await nodes.a.records.delete(admin, "shop", "r4");
    const last = await put(nodes.a, "new", "New record");
    await nodes.b.replica.waitFor(shop.id, last, 5_000);
    const second = await nodes.b.versions.coalesce(shop);
    const layered = (node: typeof nodes.a, major: string) =>
      node.engine.segmentFiles!(shop.id, Number(major)).then((files) =>
        files.some((f) => f.name === "base-hidden.bin"),
      );
    // The base is the first checkpoint's segment, which node a holds: it links its own (D-353).
    const published = nodes.memory.files.get(`segments/${shop.id}/${second}`)!.map((f) => f.name);
    expect(published.sort()).toEqual(["base-hidden.bin", "base-ref.json", "index.bin", "records.bin"]);
    for (const node of [nodes.a, nodes.b]) {
      await node.replica.waitFor(shop.id, second, 5_000);
      expect(await layered(node, first)).toBe(false);
      expect(await layered(node, second)).toBe(true);
      expect(await node.engine.count(shop.id, second)).toBe(12);
      expect(await node.records.get(admin, "shop", "r3")).toMatchObject({ title: "Changed record" });
      expect(await node.records.get(admin, "shop", "new")).toMatchObject({ title: "New record" });
      await expect(node.records.get(admin, "shop", "r4")).rejects.toBeInstanceOf(NotFoundError);
      const page = await searchRecords(node, shop.id, second);
      expect(page.totalHits).toBe(12);
      expect(page.hits.map((h) => h.record.id).sort()).toEqual(
        ["r0", "r1", "r2", "r3", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "new"].sort(),
      );
    }
  });
});

describe("a layered checkpoint whose base a node does not hold (D-353)", () => {
  const layering = { minBase: 1, maxShare: 0.5 };
  const built: number[] = [];
  // Node a finds no copy of any base it is sent (as after a purge rebuilt it), and builds instead.
  const withoutBases = (real: SearchEngine) =>
    Object.assign(Object.create(real) as SearchEngine, {
      importMajor: (
        indexKey: string,
        major: { major: number; parent: string | null; records: number },
        fill: (dir: string) => Promise<void>,
      ) =>
        real.importMajor!(indexKey, major, async (dir) => {
          await fill(dir);
          const ref = path.join(dir, "base-ref.json");
          if (fs.existsSync(ref)) fs.writeFileSync(ref, JSON.stringify({ indexBytes: 1, indexSha256: "none" }));
        }),
      checkpoint: (...args: Parameters<SearchEngine["checkpoint"]>) => {
        built.push(args[2]);
        return real.checkpoint(...args);
      },
    });
  const nodes = useTwoNodes({ layering, wrap: withoutBases }, { layering });

  test("is built by that node from its source, and served alike", async () => {
    for (let i = 0; i < 10; i++) await nodes.b.records.put(admin, "shop", `r${i}`, { title: `Record r${i}` });
    const shop = (await nodes.b.catalog.byName("ten_r", "shop"))!;
    const first = await nodes.b.versions.coalesce(shop);
    await nodes.b.records.put(admin, "shop", "r2", { title: "Changed record" });
    await nodes.b.records.delete(admin, "shop", "r3");
    const second = await nodes.b.versions.coalesce(shop);
    await nodes.a.replica.waitFor(shop.id, second, 5_000);
    // The first checkpoint (one segment, published whole) was imported; the second was built here.
    expect(built).toEqual([Number(second)]);
    expect((await nodes.a.engine.segmentFiles!(shop.id, Number(first))).length).toBeGreaterThan(0);
    for (const node of [nodes.a, nodes.b]) {
      expect(await node.engine.count(shop.id, second)).toBe(9);
      expect(await node.records.get(admin, "shop", "r2")).toMatchObject({ title: "Changed record" });
      await expect(node.records.get(admin, "shop", "r3")).rejects.toBeInstanceOf(NotFoundError);
      const page = await searchRecords(node, shop.id, second);
      expect(page.hits.map((h) => h.record.id).sort()).toEqual(["r0", "r1", "r2", "r4", "r5", "r6", "r7", "r8", "r9"]);
    }
  });
});

describe("automatic checkpoints while both nodes write past the threshold", () => {
  const builds: string[] = [];
  const release = Promise.withResolvers<void>();
  // Each node's builds are counted and held until the test lets them go.
  const holding = (node: string) => (real: SearchEngine) =>
    Object.assign(Object.create(real) as SearchEngine, {
      checkpoint: async (...args: Parameters<SearchEngine["checkpoint"]>) => {
        builds.push(node);
        await release.promise;
        return real.checkpoint(...args);
      },
    });
  const nodes = useTwoNodes({ coalesceAfter: 3, wrap: holding("a") }, { coalesceAfter: 3, wrap: holding("b") });

  test("are built by one node, once", async () => {
    const shop = (await nodes.a.catalog.byName("ten_r", "shop"))!;
    const put = (node: typeof nodes.a, id: string) => node.records.put(admin, "shop", id, { title: `Record ${id}` });
    // Minors 1 to 11, from a and b in turn: the 3rd (on a) starts a build, held; the 6th (on b)
    // and the 9th find it under way; both nodes write past the threshold meanwhile.
    let last = "";
    for (let i = 1; i <= 11; i++) {
      last = await put(i % 2 ? nodes.a : nodes.b, `r${i}`);
      if (i === 3) await expect.poll(() => builds).toEqual(["a"]);
    }
    expect(last).toBe("0.11");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(builds).toEqual(["a"]);
    release.resolve();
    await expect.poll(() => nodes.b.replica.active(shop.id)).toMatch(/^\d+\.1$/);
    const majors = (await nodes.a.engine.versions(shop.id)).filter((v) => /^\d+$/.test(v.version));
    expect(majors.map((v) => v.version)).toEqual(["0", expect.any(String)]);
    expect(builds).toHaveLength(1);
    for (const node of [nodes.a, nodes.b]) {
      await expect.poll(() => node.replica.active(shop.id)).toBe(nodes.b.replica.active(shop.id));
      expect(await node.records.get(admin, "shop", "r11")).toMatchObject({ title: "Record r11" });
    }
  });
});
