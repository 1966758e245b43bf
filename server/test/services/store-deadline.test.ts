// A service's calls bounded for a store that hangs (D-360): the bounded ones answer 503 in time
// and say whether a change may still be applied; the rest wait as before, and the call goes on.
import { afterEach, describe, expect, test } from "vitest";
import { NotFoundError, UnavailableError } from "../../src/domain/errors.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { StoreCallTimedOut, withStoreDeadline } from "../../src/services/store-deadline.ts";
import type { Db } from "../../src/store/open.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

/** A service whose every call waits for `release`, counting the calls that finished. */
class Held {
  finished: string[] = [];
  private releases: (() => void)[] = [];
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  private wait(name: string): Promise<string> {
    return new Promise((resolve) =>
      this.releases.push(() => {
        this.finished.push(name);
        resolve(name);
      }),
    );
  }
  async create(): Promise<string> {
    return this.wait("create");
  }
  async list(): Promise<string> {
    return this.wait("list");
  }
  async purge(): Promise<string> {
    return this.wait("purge");
  }
  /** A call through the service itself: not bounded twice, nor at all. */
  async createTwice(): Promise<string> {
    await this.create();
    return this.create();
  }
}

describe("withStoreDeadline", () => {
  test("a bounded call answers 503 when the bound runs out, and goes on to its end", async () => {
    const held = new Held();
    const bounded = withStoreDeadline(held, 50, { reads: ["list"], changes: ["create"] });
    const create = bounded.create().catch((error: unknown) => error);
    const list = bounded.list().catch((error: unknown) => error);
    const purge = bounded.purge();
    const [created, listed] = await Promise.all([create, list]);
    expect(created).toBeInstanceOf(UnavailableError);
    expect((created as UnavailableError).message).toBe(
      "the metadata store did not answer within 0.05 s; this change is applied if the store records it when it answers: look before sending it again",
    );
    expect((created as UnavailableError).retryAfterSeconds).toBe(5);
    expect((listed as UnavailableError).message).toBe(
      "the metadata store did not answer within 0.05 s; try again shortly",
    );
    // The unbounded call still waits; once the store answers, every call finishes.
    held.release();
    expect(await purge).toBe("purge");
    expect(held.finished.sort()).toEqual(["create", "list", "purge"]);
  });

  test("a call that answers in time answers as before, its failure too", async () => {
    const held = new Held();
    const bounded = withStoreDeadline(held, 1_000, { reads: ["list"], changes: ["create", "createTwice"] });
    const twice = bounded.createTwice();
    await new Promise((resolve) => setTimeout(resolve, 10));
    held.release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    held.release();
    expect(await twice).toBe("create");
    const failing = withStoreDeadline({ fail: async () => Promise.reject(new Error("unique violation")) }, 1_000, {
      reads: [],
      changes: ["fail"],
    });
    await expect(failing.fail()).rejects.toThrow("unique violation");
  });

  test("without a bound the service is itself", () => {
    const held = new Held();
    expect(withStoreDeadline(held, undefined, { reads: ["list"], changes: [] })).toBe(held);
  });
});

// An index's creation and deletion bound each store step of theirs (D-360): their engine side may
// wait on the change log, so the call is not bounded whole. The store's late answer decides.
describe.each(storeTargets())("an index's creation and deletion on a store that holds them, on $name", (target) => {
  const TENANT = "ten_sd";
  let services: TestServices;
  afterEach(() => services?.close());

  /** The catalog over a store whose transactions and deletes wait for `release`. */
  const heldCatalog = async () => {
    services = await openServices(target, { tenantId: TENANT });
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const real = services.store.db;
    const db = Object.assign(Object.create(real) as Db, {
      transaction: ((work: never) => gate.then(() => real.transaction(work))) as Db["transaction"],
      delete: ((table: never) => {
        const statement = real.delete(table);
        return { where: (where: never) => gate.then(() => statement.where(where)) };
      }) as unknown as Db["delete"],
    });
    const catalog = new CatalogService(db, services.engine, services.log, Date.now, undefined, undefined, 100);
    return { catalog, release };
  };

  test("a creation answered 503 is there once the store records it, engine side and all", async () => {
    const { catalog, release } = await heldCatalog();
    const created = catalog.createIndex(TENANT, { name: "late", serviceName: `${TENANT}-shop` });
    await expect(created).rejects.toBeInstanceOf(StoreCallTimedOut);
    await expect(created).rejects.toThrow(/this change is applied if the store records it when it answers/);
    release();
    // Another node's catalog (this one's notices reach nobody): its misses are not kept meanwhile.
    const looked = () => {
      services.catalog.invalidate();
      return services.catalog.getIndex(TENANT, "late").then(
        () => "there",
        () => "absent",
      );
    };
    await expect.poll(looked, { timeout: 5_000 }).toBe("there");
    // Its engine side was kept for it: a write to it is served.
    const admin = { kind: "key", keyId: "key_sd", tenantId: TENANT, type: "adm", userId: null } as const;
    await services.records.put(admin, "late", "r1", { title: "Late" });
    await expect(services.records.get(admin, "late", "r1")).resolves.toMatchObject({ title: "Late" });
  });

  test("a creation the store refuses late leaves no engine index behind", async () => {
    const { catalog, release } = await heldCatalog();
    await services.catalog.createIndex(TENANT, { name: "taken", serviceName: `${TENANT}-shop` });
    const dropped: string[] = [];
    const dropIndex = services.engine.dropIndex.bind(services.engine);
    services.engine.dropIndex = async (id) => {
      dropped.push(id);
      return dropIndex(id);
    };
    // Its name is taken: the store refuses it once it answers.
    await expect(catalog.createIndex(TENANT, { name: "taken", serviceName: `${TENANT}-shop` })).rejects.toBeInstanceOf(
      StoreCallTimedOut,
    );
    expect(dropped).toEqual([]);
    release();
    await expect.poll(() => dropped.length).toBe(1);
    await expect(services.catalog.getIndex(TENANT, "taken")).resolves.toMatchObject({ activeVersion: "0" });
  });

  test("a deletion answered 503 is done once the store records it, engine side and all", async () => {
    const { catalog, release } = await heldCatalog();
    await services.catalog.createIndex(TENANT, { name: "gone", serviceName: `${TENANT}-shop` });
    const { id } = (await services.catalog.byName(TENANT, "gone"))!;
    await expect(catalog.deleteIndex(TENANT, "gone")).rejects.toBeInstanceOf(StoreCallTimedOut);
    expect(await services.engine.count(id, "0")).toBe(0);
    release();
    await expect
      .poll(() =>
        services.engine.count(id, "0").then(
          () => "held",
          () => "dropped",
        ),
      )
      .toBe("dropped");
    services.catalog.invalidate();
    await expect(services.catalog.getIndex(TENANT, "gone")).rejects.toBeInstanceOf(NotFoundError);
  });
});
