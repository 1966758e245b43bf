// An index deleted while a write or a checkpoint of it is inside the engine (deleting takes no
// write lock): that request answered 500, "index … was dropped during the build" or ENOENT on a
// segment file (issue 15, found by the contract fuzzer). It is a 404: the index is gone. The same
// for an upload started as the index is deleted: its version row broke the row's foreign key
// (found by the fuzzer, 2026-12-02; a checkpoint's row goes through the same insertVersion).
// None of it is logged as an error: the engine's version withdrawn with its index is no fault.
import { afterEach, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import path from "node:path";
import { createFsBlobStore } from "../../src/blobs/fs-blobs.ts";
import { ConflictError, NotFoundError } from "../../src/domain/errors.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { UploadService } from "../../src/services/uploads.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_d", tenantId: "ten_d", type: "adm", userId: null };

/**
 * Holds the engine's `method` until the test lets it go, so a deletion can happen meanwhile;
 * with `later`, only once `arm()` was called (the setup calls it too).
 */
function gated(
  method: "applyChanges" | "checkpoint" | "adoptCheckpoint" | "purge" | "count" | "createIndex",
  later = false,
  /** Holds the method's answer instead: the engine has done its part when the deletion comes. */
  after = false,
) {
  let armed = !later;
  let release!: () => void;
  let entered!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const inside = new Promise<void>((r) => (entered = r));
  const wrap = (engine: SearchEngine): SearchEngine =>
    new Proxy(engine, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key !== method || typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          if (!armed) return value.apply(target, args);
          const done = after ? await value.apply(target, args) : undefined;
          entered();
          await gate;
          return after ? done : value.apply(target, args);
        };
      },
    });
  const arm = () => {
    armed = true;
  };
  return { wrap, release, inside, arm };
}

describe.each(storeTargets())("an index deleted midway, on $name", (target) => {
  let services: TestServices | undefined;
  afterEach(async () => {
    await services?.close();
    services = undefined;
  });

  test.each([
    { when: "while the engine applies it", after: false },
    { when: "once the engine applied it", after: true },
  ])("a record write whose index is deleted $when is NotFound, and logs no error", async ({ after }) => {
    // A record write goes to the engine as a group commit of the writes queued on the index.
    const g = gated("applyChanges", false, after);
    const logged: { level: string; msg: string }[] = [];
    services = await openServices(target, {
      tenantId: "ten_d",
      engine: g.wrap,
      logTo: (line) => logged.push(JSON.parse(line)),
    });
    await services.catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    const write = services.records.put(admin, "doomed", "r1", { title: "Never" });
    await g.inside;
    await services.catalog.deleteIndex("ten_d", "doomed");
    g.release();
    await expect(write).rejects.toBeInstanceOf(NotFoundError);
    // Nothing for an operator to look into: the deletion took the engine's version with its index.
    expect(logged.filter((line) => line.level === "error").map((line) => JSON.stringify(line))).toEqual([]);
    if (after)
      expect(logged.map((line) => line.msg)).toContain("could not withdraw a version the store did not record");
  });

  test.each([
    { method: "checkpoint" as const, step: "builds" },
    { method: "adoptCheckpoint" as const, step: "adopts" },
  ])("a checkpoint whose index is deleted while the engine $step it is NotFound", async ({ method }) => {
    const g = gated(method);
    services = await openServices(target, { tenantId: "ten_d", engine: g.wrap });
    const { catalog, records, versions } = services;
    await catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    for (let i = 0; i < 3; i++) await records.put(admin, "doomed", `r${i}`, { title: `Record ${i}` });
    const checkpoint = versions.coalesce((await catalog.byName("ten_d", "doomed"))!);
    await g.inside;
    await catalog.deleteIndex("ten_d", "doomed");
    g.release();
    await expect(checkpoint).rejects.toBeInstanceOf(NotFoundError);
  });

  test("an index deleted while it is listed or read is left out, or NotFound", async () => {
    const g = gated("count", true);
    services = await openServices(target, { tenantId: "ten_d", engine: g.wrap });
    const { catalog } = services;
    await catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    await catalog.createIndex("ten_d", { name: "kept", serviceName: "ten_d-shop" });
    g.arm();
    const listed = catalog.listIndexes("ten_d");
    const read = expect(catalog.getIndex("ten_d", "doomed")).rejects.toBeInstanceOf(NotFoundError);
    await g.inside;
    await catalog.deleteIndex("ten_d", "doomed");
    g.release();
    expect((await listed).map((i) => i.name)).toEqual(["kept"]);
    await read;
  });

  test("an index created as its service is deleted is NotFound, and leaves nothing", async () => {
    const g = gated("createIndex", true);
    services = await openServices(target, { tenantId: "ten_d", engine: g.wrap });
    const { catalog } = services;
    await catalog.createService("ten_d", { name: "brief" });
    g.arm();
    const created = catalog.createIndex("ten_d", { name: "orphan", serviceName: "brief" });
    await g.inside;
    await catalog.deleteService("ten_d", "brief");
    g.release();
    await expect(created).rejects.toThrow('service "brief" does not exist');
    await expect(created).rejects.toBeInstanceOf(NotFoundError);
    expect((await catalog.listIndexes("ten_d")).map((i) => i.name)).not.toContain("orphan");
  });

  test("a service deleted as an index is created in it is a Conflict, and the index stays", async () => {
    services = await openServices(target, { tenantId: "ten_d" });
    const { catalog } = services;
    await catalog.createService("ten_d", { name: "busy" });
    // The index is created after the delete counted the service's indexes (none), before its delete.
    const db = services.store.db;
    const remove = db.delete.bind(db);
    db.delete = ((table: Parameters<typeof remove>[0]) => ({
      where: async (condition: Parameters<ReturnType<typeof remove>["where"]>[0]) => {
        db.delete = remove;
        await catalog.createIndex("ten_d", { name: "late", serviceName: "busy" });
        return remove(table).where(condition);
      },
    })) as unknown as typeof db.delete;
    await expect(catalog.deleteService("ten_d", "busy")).rejects.toBeInstanceOf(ConflictError);
    expect((await catalog.getIndex("ten_d", "late")).serviceName).toBe("busy");
  });

  /** The index deleted right after a new major id was drawn for it, before its version row is written. */
  function deleteAfterTakeMajor(s: TestServices, name: string) {
    const take = s.versions.takeMajor.bind(s.versions);
    s.versions.takeMajor = async (indexId: string) => {
      const major = await take(indexId);
      await s.catalog.deleteIndex("ten_d", name);
      return major;
    };
  }

  test("an upload started as its index is deleted is NotFound", async () => {
    services = await openServices(target, { tenantId: "ten_d" });
    const uploads = new UploadService({
      db: services.store.db,
      catalog: services.catalog,
      versions: services.versions,
      blobs: createFsBlobStore(path.join(services.dir, "blobs")),
      secret: Buffer.alloc(32, 7),
      maxUploadBytes: 1 << 20,
      onQueued: () => {},
    });
    await services.catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    deleteAfterTakeMajor(services, "doomed");
    await expect(uploads.start(admin, "doomed", "http://sift.test")).rejects.toBeInstanceOf(NotFoundError);
  });

  test("a purge whose index is deleted while the engine erases the record is NotFound", async () => {
    const g = gated("purge");
    services = await openServices(target, { tenantId: "ten_d", engine: g.wrap });
    const { catalog, records } = services;
    await catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    await records.put(admin, "doomed", "r1", { title: "Record" });
    const purge = records.purge(admin, "doomed", "r1");
    await g.inside;
    await catalog.deleteIndex("ten_d", "doomed");
    g.release();
    await expect(purge).rejects.toBeInstanceOf(NotFoundError);
  });
});
