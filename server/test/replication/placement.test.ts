// Data placement (D-385): with replication an index is held only by the nodes of its service's
// regions. Two nodes over one in-memory change log and one store, one in Frankfurt and one in
// London: the London node passes over a Frankfurt-only index's entries, keeps nothing of it, and
// refuses its reads and writes with 421 naming Frankfurt, while it holds an index of every region.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MisdirectedError } from "../../src/domain/errors.ts";
import { RegionLagService } from "../../src/services/region-lag.ts";
import type { Store } from "../../src/store/open.ts";
import { tenants } from "../../src/store/schema.ts";
import { Placement } from "../../src/replication/placement.ts";
import type { Lookup } from "../../src/store/lookup.ts";
import { storeTargets } from "../support/store.ts";
import { MemoryLog } from "./memory-log.ts";
import { admin, openNode, silent, type TestNode, waitForPointer } from "./replica-nodes.ts";

const regionUrls = { frankfurt: "http://frankfurt.example", london: "http://london.example" };

describe("an index held only in its service's regions", () => {
  const memory = new MemoryLog();
  let store: Store;
  let frankfurt: TestNode;
  let london: TestNode;
  beforeAll(async () => {
    store = await storeTargets()[0]!.open();
    await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
    frankfurt = await openNode(memory, store, "a", { placement: { region: "frankfurt", regionUrls } });
    london = await openNode(memory, store, "b", { placement: { region: "london", regionUrls } });
    await frankfurt.catalog.createService("ten_r", { name: "ten_r-fra", regions: ["frankfurt"] });
    await frankfurt.catalog.createService("ten_r", { name: "ten_r-all" });
    // Made through the node that will not hold it: its creation's entries come before its row.
    await london.catalog.createIndex("ten_r", { name: "local", serviceName: "ten_r-fra" });
    await frankfurt.catalog.createIndex("ten_r", { name: "everywhere", serviceName: "ten_r-all" });
  });
  afterAll(async () => {
    await frankfurt?.close();
    await london?.close();
    await store?.close();
  });

  test("the other region passes over its entries and keeps none of its records", async () => {
    let version = "";
    for (let i = 0; i < 5; i++)
      version = await frankfurt.records.put(admin, "local", `r-${i}`, { title: `Local ${i}` });
    const everywhere = await frankfurt.records.put(admin, "everywhere", "e-1", { title: "Everywhere" });
    await london.replica.catchUp();
    const { id } = (await frankfurt.catalog.byName("ten_r", "local"))!;
    expect((await frankfurt.records.get(admin, "local", "r-4")).title).toBe("Local 4");
    // London applied every entry of the log (it is caught up) but holds nothing of the index.
    expect(await london.replica.caughtUp()).toMatchObject({ ready: true });
    expect(london.replica.appliedSeq(id)).toBe(0);
    expect(london.replica.has(id, version)).toBe(false);
    await expect(london.engine.versions(id)).rejects.toThrow();
    // The rows of the versions reach the shared store from the node that holds the index.
    await frankfurt.replica.storeSettled(id);
    // The index of every region is held there too.
    expect((await london.records.get(admin, "everywhere", "e-1", undefined, everywhere)).title).toBe("Everywhere");
  });

  test("its reads and writes there are 421, naming the regions that hold it", async () => {
    const read = await london.records.get(admin, "local", "r-1").catch((error: unknown) => error);
    expect(read).toBeInstanceOf(MisdirectedError);
    expect(read).toMatchObject({
      message:
        'index "local" of service "ten_r-fra" is held in frankfurt (http://frankfurt.example), not in london: ask one of those regions',
      regions: [{ id: "frankfurt", url: "http://frankfurt.example" }],
    });
    await expect(london.records.put(admin, "local", "r-9", { title: "Nine" })).rejects.toBeInstanceOf(MisdirectedError);
    expect((await frankfurt.records.get(admin, "local", "r-1")).title).toBe("Local 1");
    // Its description is the shared store's, the same in every region, with where it is held
    // where it is not held.
    expect(await london.catalog.getIndex("ten_r", "local")).toMatchObject({ name: "local", records: 5 });
    expect((await london.catalog.listIndexes("ten_r")).map((i) => [i.name, i.heldIn])).toEqual([
      ["everywhere", undefined],
      ["local", [{ id: "frankfurt", url: "http://frankfurt.example" }]],
    ]);
  });

  test("a node that does not hold it never says it lacks it, though asked for it before it knew", async () => {
    const { id } = (await frankfurt.catalog.byName("ten_r", "local"))!;
    const lacking: string[] = [];
    london.log.onNotice?.((notice) => {
      if (notice.kind === "index-lacking") lacking.push(notice.indexId);
    });
    // As after a restart, before any entry of the index came: the periodic retention pass asks
    // every node for every index of the store.
    (london.placement as unknown as { known: Map<string, boolean> }).known.clear();
    expect(london.replica.active(id)).toBeUndefined();
    // An index the store does not know is another matter: a node lacking it says so.
    expect(london.replica.active("idx_unknown")).toBeUndefined();
    await expect.poll(() => lacking).toContain("idx_unknown");
    expect(lacking).not.toContain(id);
    expect(london.placement!.elsewhere(id)).toBe(true);
  });

  test("it is deleted through a region that does not hold it, and gone from the one that does", async () => {
    const { id } = (await frankfurt.catalog.byName("ten_r", "local"))!;
    await london.catalog.deleteIndex("ten_r", "local");
    await frankfurt.replica.catchUp();
    expect(frankfurt.replica.isDropped(id)).toBe(true);
    await expect(frankfurt.engine.versions(id)).rejects.toThrow();
    await frankfurt.catalog.createIndex("ten_r", { name: "local", serviceName: "ten_r-fra" });
  });

  test("its lag is reported only where it is held", async () => {
    const shown = async (node: TestNode) =>
      (await new RegionLagService(store.db, node.replica, Date.now, node.placement).forTenant("ten_r")).map(
        (i) => i.indexName,
      );
    expect(await shown(frankfurt)).toEqual(["everywhere", "local"]);
    expect(await shown(london)).toEqual(["everywhere"]);
  });
});

describe("an index whose service's region gets its endpoint later", () => {
  const memory = new MemoryLog();
  let store: Store;
  let london: TestNode;
  afterAll(async () => {
    await london?.close();
    await store?.close();
  });

  test("a node restarted knowing that region removes its copy, though the index gets no write (D-389)", async () => {
    store = await storeTargets()[0]!.open();
    await store.db.insert(tenants).values({ id: "ten_r", name: "ten_r", createdAt: 0 });
    // Tokyo runs no Sift yet: no region of the service does, so London holds its index.
    london = await openNode(memory, store, "b", { placement: { region: "london", regionUrls } });
    await london.catalog.createService("ten_r", { name: "ten_r-tok", regions: ["tokyo"] });
    await london.catalog.createIndex("ten_r", { name: "roaming", serviceName: "ten_r-tok" });
    const version = await london.records.put(admin, "roaming", "r-1", { title: "Roaming" });
    const { id } = (await london.catalog.byName("ten_r", "roaming"))!;
    expect(london.replica.has(id, version)).toBe(true);
    await london.replica.storeSettled(id);

    // Tokyo is given its endpoint; London restarts with it, and no write comes to the index.
    await london.close({ keepData: true });
    london = await openNode(memory, store, "b", {
      dir: london.dir,
      placement: { region: "london", regionUrls: { ...regionUrls, tokyo: "http://tokyo.example" } },
    });
    await expect
      .poll(() =>
        london.engine.versions(id).then(
          () => "kept",
          () => "removed",
        ),
      )
      .toBe("removed");
    expect(london.replica.has(id, version)).toBe(false);
    await expect(london.records.get(admin, "roaming", "r-1")).rejects.toMatchObject({
      regions: [{ id: "tokyo", url: "http://tokyo.example" }],
    });
  });
});

describe("an index whose service's region loses its endpoint (D-390)", () => {
  const opened: { store?: Store; nodes: Set<TestNode> } = { nodes: new Set() };
  afterAll(async () => {
    for (const node of opened.nodes) await node.close();
    await opened.store?.close();
  });
  // A snapshot every 5 entries of an index: the log keeps only what follows the newest one.
  const snapshots = { every: 5, goneAfterMs: 60_000 };

  /**
   * Tokyo writes two indexes of a Tokyo-only service while London passes over their entries; the
   * large one's first entries go behind its snapshot, as a truncation removes them. Then Tokyo
   * stops running Sift and London is restarted without its endpoint: it holds them now.
   */
  async function passedOverInLondon(tenant: string) {
    const memory = new MemoryLog();
    opened.store ??= await storeTargets()[0]!.open();
    const store = opened.store;
    await store.db.insert(tenants).values({ id: tenant, name: tenant, createdAt: 0 });
    const withTokyo = { ...regionUrls, tokyo: "http://tokyo.example" };
    const tokyo = await openNode(memory, store, "t", {
      snapshots,
      placement: { region: "tokyo", regionUrls: withTokyo },
    });
    let london = await openNode(memory, store, "b", {
      snapshots,
      placement: { region: "london", regionUrls: withTokyo },
    });
    opened.nodes.add(tokyo).add(london);
    const who = { ...admin, tenantId: tenant };
    await tokyo.catalog.createService(tenant, { name: `${tenant}-tok`, regions: ["tokyo"] });
    await tokyo.catalog.createIndex(tenant, { name: "small", serviceName: `${tenant}-tok` });
    await tokyo.catalog.createIndex(tenant, { name: "large", serviceName: `${tenant}-tok` });
    await tokyo.records.put(who, "small", "s-1", { title: "Small 1" });
    for (let i = 0; i < 12; i++) await tokyo.records.put(who, "large", `l-${i}`, { title: `Large ${i}` });
    const small = (await tokyo.catalog.byName(tenant, "small"))!.id;
    const large = (await tokyo.catalog.byName(tenant, "large"))!.id;
    await london.replica.catchUp();
    expect(london.replica.appliedSeq(small)).toBe(0);
    expect(london.replica.appliedSeq(large)).toBe(0);
    const pointer = await waitForPointer(memory, large);
    memory.entries.forEach((e, i) => {
      if (e?.index === large && i + 1 < pointer.seq) memory.entries[i] = null;
    });
    expect(memory.docs.has(`snapshots/${small}/latest`)).toBe(false);
    await tokyo.replica.storeSettled(large);
    await tokyo.close();
    await london.close({ keepData: true });
    opened.nodes.delete(tokyo);
    opened.nodes.delete(london);
    london = await openNode(memory, store, "b", {
      dir: london.dir,
      snapshots,
      placement: { region: "london", regionUrls },
    });
    opened.nodes.add(london);
    const title = (index: string, id: string) =>
      london.records.get(who, index, id).then(
        (record) => record.title,
        (error: Error) => error.constructor.name,
      );
    return { london, who, large, title };
  }

  test("a node restarted without it takes the index up from the log and its snapshot, though it gets no write", async () => {
    const { london, who, large, title } = await passedOverInLondon("ten_p1");
    await expect.poll(() => title("large", "l-11"), { timeout: 10_000 }).toBe("Large 11");
    for (let i = 0; i < 12; i++) expect(await title("large", `l-${i}`)).toBe(`Large ${i}`);
    await expect.poll(() => title("small", "s-1")).toBe("Small 1");
    // They take writes there, each building on what the node took up.
    const version = await london.records.put(who, "large", "l-12", { title: "Large 12" });
    expect(london.replica.has(large, version)).toBe(true);
    expect(await title("large", "l-12")).toBe("Large 12");
    await london.records.put(who, "small", "s-2", { title: "Small 2" });
    expect(await title("small", "s-1")).toBe("Small 1");
    expect(await title("small", "s-2")).toBe("Small 2");
  });
});

describe("which regions hold a service's indexes", () => {
  const placement = (region: string, urls: Record<string, string>) =>
    new Placement({ region, regionUrls: urls, lookup: undefined as never, log: silent });

  test("the service's regions that run Sift; every region when none of them does", () => {
    const london = placement("london", regionUrls);
    expect(london.holdsRegions(["london", "tokyo"])).toBe(true);
    expect(london.holdsRegions(["frankfurt"])).toBe(false);
    // Tokyo has no endpoint: no region of the service runs Sift, and no index is held nowhere.
    expect(london.holdsRegions(["tokyo", "sydney"])).toBe(true);
    expect(london.where(["frankfurt", "tokyo", "london"])).toEqual([
      { id: "frankfurt", url: "http://frankfurt.example" },
    ]);
    // Without other regions' endpoints, a node knows of no other region: it holds everything.
    expect(placement("london", {}).holdsRegions(["frankfurt"])).toBe(true);
  });

  test("the store is asked once per index, and not while it is out of reach", async () => {
    let asked = 0;
    let answer: () => Promise<unknown> = async () => ({ regions: ["frankfurt"] });
    const lookup = (async () => {
      asked++;
      return answer();
    }) as unknown as Lookup;
    const london = new Placement({ region: "london", regionUrls, lookup, log: silent });
    // An entry and its files' announcement at once: one read; then the answer is kept.
    expect(await Promise.all([london.holds("idx_1"), london.holds("idx_1")])).toEqual([false, false]);
    expect(await london.holds("idx_1")).toBe(false);
    expect(asked).toBe(1);
    // A store that does not answer: held meanwhile, and not asked again for a while.
    answer = () => Promise.reject(new Error("a lookup took longer than 2 s"));
    expect(await london.holds("idx_2")).toBe(true);
    expect(await london.holds("idx_3")).toBe(true);
    expect(asked).toBe(2);
    expect(await london.holds("idx_1")).toBe(false);
  });
});
