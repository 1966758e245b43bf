// Retention over a version tree written straight into a real store. The engine is a fake that
// records dropVersion calls: what retention asks the engine to drop is exactly what is under
// test, and a real engine would also drop a major's minors by itself, hiding a missing call.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { VersionService } from "../../src/services/versions.ts";
import { IndexLocks } from "../../src/services/versions/lock.ts";
import type { Store } from "../../src/store/open.ts";
import { indexes, services, tenants, versions } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";

type Row = typeof versions.$inferInsert;

/** The calls retention may make; anything else fails the test. */
function recordingEngine(dropped: string[]): SearchEngine {
  const unused = (name: string) => () => Promise.reject(new Error(`retention must not call engine.${name}`));
  return {
    name: "fake",
    open: unused("open"),
    close: unused("close"),
    ping: unused("ping"),
    createIndex: unused("createIndex"),
    dropIndex: unused("dropIndex"),
    bulkWriter: unused("bulkWriter"),
    applyChange: unused("applyChange"),
    checkpoint: unused("checkpoint"),
    activate: unused("activate"),
    dropVersion: async (_indexKey, version) => void dropped.push(version),
    purge: unused("purge"),
    versions: unused("versions"),
    search: unused("search"),
    get: unused("get"),
    count: unused("count"),
  };
}

/**
 * The tree, by createdAt (retention keeps the newest ready versions):
 *
 *   0 (0) <- 0.1 (10) <- 0.2 (105, written late)
 *   1 (30) <- 1.1 (40) <- 1.2 (50)
 *                     \<- 1.3 (60)   ACTIVE in most tests: an old branch
 *   2 (70, checkpoint of 1.2) <- 2.1 (80) <- 2.2 (110)
 *                                        \<- 2.3 (120)
 *   3 (90) pending upload;  4 (100) failed upload;  0.3 (130) dropped earlier
 */
const TREE: Omit<Row, "indexId" | "major" | "minor">[] = [
  { version: "0", parent: null, kind: "bulk", state: "ready", createdAt: 0 },
  { version: "0.1", parent: "0", kind: "change", state: "ready", createdAt: 10 },
  { version: "1", parent: null, kind: "bulk", state: "ready", createdAt: 30 },
  { version: "1.1", parent: "1", kind: "change", state: "ready", createdAt: 40 },
  { version: "1.2", parent: "1.1", kind: "change", state: "ready", createdAt: 50 },
  { version: "1.3", parent: "1.1", kind: "change", state: "ready", createdAt: 60 },
  { version: "2", parent: "1.2", kind: "checkpoint", state: "ready", createdAt: 70 },
  { version: "2.1", parent: "2", kind: "change", state: "ready", createdAt: 80 },
  { version: "3", parent: null, kind: "bulk", state: "pending", createdAt: 90 },
  { version: "4", parent: null, kind: "bulk", state: "failed", createdAt: 100 },
  { version: "0.2", parent: "0.1", kind: "change", state: "ready", createdAt: 105 },
  { version: "2.2", parent: "2.1", kind: "change", state: "ready", createdAt: 110 },
  { version: "2.3", parent: "2.1", kind: "change", state: "ready", createdAt: 120 },
  { version: "0.3", parent: "0.2", kind: "change", state: "dropped", createdAt: 130 },
];

describe.each(storeTargets())("retention on $name", (target) => {
  let store: Store;
  let seq = 0;

  beforeAll(async () => {
    store = await target.open();
    await store.db.insert(tenants).values({ id: "ten_r", name: "r", createdAt: 0 });
    await store.db
      .insert(services)
      .values({ id: "svc_r", tenantId: "ten_r", name: "retention", regions: ["eu"], replicas: 1, createdAt: 0 });
  });
  afterAll(() => store?.close());

  /** A fresh index holding TREE with `active` as its active version. */
  async function treeIndex(active: string): Promise<string> {
    const id = `idx_r${++seq}`;
    await store.db.insert(indexes).values({
      id,
      tenantId: "ten_r",
      serviceId: "svc_r",
      name: id,
      visibility: "PRIVATE",
      activeVersion: active,
      nextMajor: 5,
      createdAt: 0,
    });
    await store.db.insert(versions).values(
      TREE.map((r) => {
        const [major, minor = "0"] = r.version.split(".");
        return { ...r, indexId: id, major: Number(major), minor: Number(minor) };
      }),
    );
    return id;
  }

  const stateOf = async (indexId: string) =>
    Object.fromEntries(
      (
        await store.db
          .select({ v: versions.version, s: versions.state })
          .from(versions)
          .where(eq(versions.indexId, indexId))
      ).map((r) => [r.v, r.s]),
    );

  let engineDrops: string[];
  /** `locks`: shared with the test, to hold the index's writes. */
  const service = (retainVersions: number, locks?: IndexLocks) =>
    new VersionService({
      db: store.db,
      engine: recordingEngine(engineDrops),
      catalog: { setActive: () => {} } as never,
      policy: { coalesceAfter: 1_000, retainVersions },
      log: createLogger("silent"),
      ...(locks ? { locks } : {}),
    });
  beforeEach(() => {
    engineDrops = [];
  });

  test("keeps the active version, the newest ready ones, what they are built on, and pending uploads", async () => {
    const index = await treeIndex("1.3");
    const dropped = await service(2).applyRetention(index);

    // Kept: 1.3 (active) with 1.1 and 1 under it; 2.3 and 2.2 (the two newest ready) with 2.1 and
    // 2 under them, but not 1.2: a checkpoint's parent is provenance; 3 (pending).
    // Dropped, newest first: 0.2 (third newest ready), 4 (failed), 1.2, 0.1 and 0 (nothing kept in major 0).
    expect(dropped).toEqual(["0.2", "4", "1.2", "0.1", "0"]);
    // The engine only holds ready versions: the failed upload is just marked.
    expect(engineDrops).toEqual(["0.2", "1.2", "0.1", "0"]);
    expect(await stateOf(index)).toEqual({
      "0": "dropped",
      "0.1": "dropped",
      "0.2": "dropped",
      "0.3": "dropped",
      "1": "ready",
      "1.1": "ready",
      "1.2": "dropped",
      "1.3": "ready",
      "2": "ready",
      "2.1": "ready",
      "2.2": "ready",
      "2.3": "ready",
      "3": "pending",
      "4": "dropped",
    });

    // Nothing more to drop: a second pass changes nothing.
    expect(await service(2).applyRetention(index)).toEqual([]);
    expect(engineDrops).toHaveLength(4);
  });

  test("one more retained version keeps the third newest and what it is built on", async () => {
    const index = await treeIndex("1.3");
    expect(await service(3).applyRetention(index)).toEqual(["4", "1.2"]);
    expect(engineDrops).toEqual(["1.2"]);
  });

  test("with the newest version active, only the limit and the pending upload hold the rest", async () => {
    const index = await treeIndex("2.3");
    expect(await service(1).applyRetention(index)).toEqual(["2.2", "0.2", "4", "1.3", "1.2", "1.1", "1", "0.1", "0"]);
    expect(engineDrops).toEqual(["2.2", "0.2", "1.3", "1.2", "1.1", "1", "0.1", "0"]);
  });

  test("a pass with nothing to drop does not wait for the index's writes; one with drops does", async () => {
    // Each automatic checkpoint runs a pass; most drop nothing, and reading the index's rows
    // under its lock held its writes for that long.
    const index = await treeIndex("1.3");
    const locks = new IndexLocks();
    const held = (retainVersions: number) => service(retainVersions, locks);
    expect(await held(100).applyRetention(index)).toEqual(["4"]);
    let release = () => {};
    const writing = locks.run(index, () => new Promise<void>((resolve) => (release = resolve)));
    const waited = new Promise((resolve) => setTimeout(() => resolve("waited for the lock"), 5_000));
    expect(await Promise.race([held(100).applyRetention(index), waited])).toEqual([]);
    let done = false;
    const pass = held(2)
      .applyRetention(index)
      .then((dropped) => {
        done = true;
        return dropped;
      });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(done).toBe(false);
    release();
    await writing;
    expect(await pass).toEqual(["0.2", "1.2", "0.1", "0"]);
  });
});
