// The replica over a change log that lost entries (D-369, D-374, D-375), had no leader for a moment
// (D-372) or was out of reach (D-279, D-337), and an entry a node cannot apply (D-376): two nodes
// over one in-memory log and one store (replica-nodes.ts).
import { and, eq } from "drizzle-orm";
import { describe, expect, test } from "vitest";
import { NotFoundError, UnavailableError } from "../../src/domain/errors.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { NotAppendedError } from "../../src/ports/change-log.ts";
import { versions } from "../../src/store/schema.ts";
import { storeTargets } from "../support/store.ts";
import { MemoryLog } from "./memory-log.ts";
import {
  admin,
  holdsAllAndFollows,
  type NodeOptions,
  openNode,
  openShopNode,
  type TestNode,
  useTwoNodes,
  waitForPointer,
  writeShop,
} from "./replica-nodes.ts";

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
  test("a node added later sets that index aside, and starts, and serves the others; deleted, it is made again", async () => {
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

      // The way out (docs/replication.md): delete the index, applied even where it is set aside,
      // and make it again under the same name; it takes writes and serves them here.
      await c.catalog.deleteIndex("ten_r", "shop");
      await c.catalog.createIndex("ten_r", { name: "shop", serviceName: "ten_r-shop" });
      await c.records.put(admin, "shop", "again", { title: "Made again" });
      expect((await c.records.get(admin, "shop", "again"))?.title).toBe("Made again");
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
