// What a version changed (docs/versions.md, What a version changed; D-237): record changes against
// their parent, uploads against the version live before them, checkpoints and purges, a page of
// ids at a time; computed by the embedded engine from what the versions store.
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { ConflictError, NotFoundError, NotImplementedError } from "../../src/domain/errors.ts";
import { formatVersion } from "../../src/domain/version-id.ts";
import type { SearchRecord } from "../../src/ports/engine.ts";
import type { IndexRef } from "../../src/services/catalog.ts";
import { VersionService } from "../../src/services/versions.ts";
import { versions as versionRows } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_d", tenantId: "ten_d", type: "adm", userId: null };

describe.each(storeTargets())("what a version changed on $name", (target) => {
  let services: TestServices;
  const ref = async (name = "shop"): Promise<IndexRef> => (await services.catalog.byName("ten_d", name))!;
  const changes = async (version: string, page: { after?: string; limit?: number } = {}, name = "shop") =>
    services.versions.changes(await ref(name), version, { limit: 100, ...page });

  /** An upload as the ingest runner makes one: a pending major, the records, then finishBulk. */
  async function upload(name: string, records: SearchRecord[], options: { activate?: boolean } = {}) {
    const { versions, engine, store } = services;
    const r = await ref(name);
    const major = await versions.takeMajor(r.id);
    const startedAt = Date.now();
    await store.db.insert(versionRows).values({
      indexId: r.id,
      version: formatVersion(major),
      major,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: startedAt,
    });
    const writer = await engine.bulkWriter(r.id, major);
    await writer.add(records);
    const { records: written } = await writer.commit();
    return versions.finishBulk(await ref(name), major, {
      records: written,
      activate: options.activate ?? true,
      startedAt,
    });
  }

  beforeAll(async () => {
    services = await openServices(target, { tenantId: "ten_d", policy: { retainVersions: 100 } });
    await services.catalog.createIndex("ten_d", { name: "shop", serviceName: "ten_d-shop" });
  });
  afterAll(() => services?.close());

  test("a record change: the id, and whether it was added, updated, rewritten as it was, or deleted", async () => {
    const { records } = services;
    const added = await records.put(admin, "shop", "hose", { title: "Garden hose", weight: 4 });
    expect(await changes(added)).toEqual({
      version: added,
      kind: "change",
      base: "0",
      counts: { added: 1, updated: 0, deleted: 0, unchanged: 0 },
      changes: [{ id: "hose", change: "added" }],
    });
    await records.put(admin, "shop", "rake", { title: "Rake" });
    const updated = await records.put(admin, "shop", "hose", { title: "Garden hose, 25 m", weight: 4 });
    expect(await changes(updated)).toMatchObject({
      base: "0.2",
      counts: { added: 0, updated: 1, deleted: 0, unchanged: 1 },
      changes: [{ id: "hose", change: "updated" }],
    });
    // The same content again: still the record the change wrote, listed as such.
    const same = await records.put(admin, "shop", "hose", { weight: 4, title: "Garden hose, 25 m" });
    expect(await changes(same)).toMatchObject({
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 2 },
      changes: [{ id: "hose", change: "unchanged" }],
    });
    const deleted = await records.delete(admin, "shop", "rake");
    expect(await changes(deleted)).toMatchObject({
      base: same,
      counts: { added: 0, updated: 0, deleted: 1, unchanged: 1 },
      changes: [{ id: "rake", change: "deleted" }],
    });
  });

  test("an upload: counts against the version live before it, and the changed ids a page at a time", async () => {
    await services.catalog.createIndex("ten_d", { name: "bulk", serviceName: "ten_d-shop" });
    const first = Array.from({ length: 300 }, (_, i) => ({ id: `r${String(i).padStart(3, "0")}`, title: `Item ${i}` }));
    const v1 = await upload("bulk", first);
    expect(await changes(v1, {}, "bulk")).toMatchObject({
      kind: "bulk",
      base: "0",
      counts: { added: 300, updated: 0, deleted: 0, unchanged: 0 },
    });
    // A change on top, then a new upload: r000..r009 gone, r010..r019 retitled, 5 new, and the
    // changed record as the PUT stored it (`data: {}` included) in another key order: unchanged.
    await services.records.put(admin, "bulk", "r299", { title: "Item 299", weight: 2 });
    const second: SearchRecord[] = first
      .slice(10)
      .map((r, i) =>
        i < 10 ? { ...r, title: `${r.title} (new)` } : r.id === "r299" ? { weight: 2, data: {}, ...r } : r,
      );
    second.push(...Array.from({ length: 5 }, (_, i) => ({ id: `n${i}`, title: `New ${i}` })));
    const v2 = await upload("bulk", second);
    const all = await changes(v2, { limit: 1000 }, "bulk");
    expect(all.base).toBe(`${v1}.1`);
    expect(all.counts).toEqual({ added: 5, updated: 10, deleted: 10, unchanged: 280 });
    expect(all.next).toBeUndefined();
    expect(all.changes).toHaveLength(25);
    expect(all.changes.slice(0, 6)).toEqual([
      { id: "n0", change: "added" },
      { id: "n1", change: "added" },
      { id: "n2", change: "added" },
      { id: "n3", change: "added" },
      { id: "n4", change: "added" },
      { id: "r000", change: "deleted" },
    ]);
    expect(all.changes.at(-1)).toEqual({ id: "r019", change: "updated" });

    // Paged: the same list, `next` to `after`, counts on every page.
    const paged: typeof all.changes = [];
    let after: string | undefined;
    for (let pages = 0; ; pages++) {
      const page = await changes(v2, { limit: 7, ...(after ? { after } : {}) }, "bulk");
      expect(page.counts).toEqual(all.counts);
      paged.push(...page.changes);
      if (page.next === undefined) break;
      expect(page.changes).toHaveLength(7);
      after = page.next;
      expect(pages).toBeLessThan(10);
    }
    expect(paged).toEqual(all.changes);
    expect((await changes(v2, { after: "r019" }, "bulk")).changes).toEqual([]);
  });

  test("an upload not activated is compared with the version live when it finished", async () => {
    await services.catalog.createIndex("ten_d", { name: "side", serviceName: "ten_d-shop" });
    const v1 = await upload("side", [
      { id: "a", title: "A" },
      { id: "k", title: "K", data: { x: 1, y: [2, { z: 3 }] } },
    ]);
    await services.records.put(admin, "side", "b", { title: "B" });
    // `k` with its keys in another order is the same record.
    const v2 = await upload(
      "side",
      [
        { id: "a", title: "A2" },
        { data: { y: [2, { z: 3 }], x: 1 }, title: "K", id: "k" },
      ],
      { activate: false },
    );
    expect(await changes(v2, {}, "side")).toMatchObject({
      base: `${v1}.1`,
      counts: { added: 0, updated: 1, deleted: 1, unchanged: 1 },
      changes: [
        { id: "a", change: "updated" },
        { id: "b", change: "deleted" },
      ],
    });
  });

  test("a checkpoint changes no record; a purge names the id it erased and who asked", async () => {
    const { records, versions } = services;
    const sawAdded = await records.put(admin, "shop", "saw", { title: "Saw" });
    expect((await changes(sawAdded)).changes).toEqual([{ id: "saw", change: "added" }]);
    const checkpoint = await versions.coalesce(await ref());
    expect(await changes(checkpoint)).toMatchObject({
      kind: "checkpoint",
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 2 },
      changes: [],
    });
    const purged = await records.purge(admin, "shop", "saw");
    expect(await changes(purged)).toEqual({
      version: purged,
      kind: "purge",
      base: checkpoint,
      counts: { added: 0, updated: 0, deleted: 1, unchanged: 1 },
      changes: [{ id: "saw", change: "purged" }],
      purge: { recordId: "saw", by: "key:key_d" },
    });
    expect((await changes(purged, { after: "saw" })).changes).toEqual([]);
    // What was computed before the purge is computed again: the record is gone from that change too.
    expect(await changes(sawAdded)).toMatchObject({
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 1 },
      changes: [],
    });
  });

  test("an unknown or dropped version is a 404; a pending one a 409", async () => {
    await expect(changes("99")).rejects.toBeInstanceOf(NotFoundError);
    await expect(changes("0.999")).rejects.toBeInstanceOf(NotFoundError);
    const r = await ref();
    const major = await services.versions.takeMajor(r.id);
    await services.store.db.insert(versionRows).values({
      indexId: r.id,
      version: formatVersion(major),
      major,
      minor: 0,
      parent: null,
      kind: "bulk",
      state: "pending",
      createdAt: Date.now(),
    });
    await expect(changes(formatVersion(major))).rejects.toBeInstanceOf(ConflictError);
  });

  test("a version dropped while it was being compared is a 404, not a failure of the server", async () => {
    const r = await ref();
    const version = await services.records.put(admin, "shop", "late", { title: "Late" });
    const engine = Object.create(services.engine) as typeof services.engine;
    // Retention drops the version between the row being read and the engine comparing.
    engine.diff = async () => {
      await services.store.db
        .update(versionRows)
        .set({ state: "dropped" })
        .where(and(eq(versionRows.indexId, r.id), eq(versionRows.version, version)));
      throw new Error(`index ${r.id}: unknown version ${version}`);
    };
    const racing = new VersionService({
      db: services.store.db,
      engine,
      catalog: services.catalog,
      log: services.log,
      policy: { coalesceAfter: 1_000, retainVersions: 100 },
    });
    await expect(racing.changes(r, version, { limit: 10 })).rejects.toBeInstanceOf(NotFoundError);
  });

  test("an engine that cannot compare versions answers 501 for changes and uploads, not for checkpoints", async () => {
    const engine = Object.create(services.engine) as typeof services.engine;
    Object.defineProperty(engine, "diff", { value: undefined });
    const plain = new VersionService({
      db: services.store.db,
      engine,
      catalog: services.catalog,
      log: services.log,
      policy: { coalesceAfter: 1_000, retainVersions: 100 },
    });
    const r = await ref();
    const listed = await services.versions.list(r);
    const change = listed.find((v) => v.kind === "change")!.version;
    const checkpoint = listed.find((v) => v.kind === "checkpoint")!.version;
    await expect(plain.changes(r, change, { limit: 10 })).rejects.toBeInstanceOf(NotImplementedError);
    expect((await plain.changes(r, checkpoint, { limit: 10 })).kind).toBe("checkpoint");
  });
});
