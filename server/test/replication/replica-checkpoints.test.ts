// The replica's snapshots and checkpoints while nodes write: a snapshot being written, checkpoints
// built once and adopted everywhere, layered ones (D-351, D-353), automatic ones past the
// threshold. Two nodes over one in-memory log and one store (replica-nodes.ts).
import fs from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { NotFoundError } from "../../src/domain/errors.ts";
import { within } from "../../src/within.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import type { SnapshotManifest } from "../../src/replication/snapshots.ts";
import { admin, searchRecords, useTwoNodes, waitForPointer } from "./replica-nodes.ts";

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
