// An index deleted while a write or a checkpoint of it is inside the engine (deleting takes no
// write lock): that request answered 500, "index … was dropped during the build" or ENOENT on a
// segment file (issue 15, found by the contract fuzzer). It is a 404: the index is gone.
import { afterEach, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { NotFoundError } from "../../src/domain/errors.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const admin: Principal = { kind: "key", keyId: "key_d", tenantId: "ten_d", type: "adm", userId: null };

/** Holds the engine's `method` until the test lets it go, so a deletion can happen meanwhile. */
function gated(method: "applyChanges" | "checkpoint" | "purge") {
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
          entered();
          await gate;
          return value.apply(target, args);
        };
      },
    });
  return { wrap, release, inside };
}

describe.each(storeTargets())("an index deleted midway, on $name", (target) => {
  let services: TestServices | undefined;
  afterEach(async () => {
    await services?.close();
    services = undefined;
  });

  test("a record write whose index is deleted while the engine applies it is NotFound", async () => {
    // A record write goes to the engine as a group commit of the writes queued on the index.
    const g = gated("applyChanges");
    services = await openServices(target, { tenantId: "ten_d", engine: g.wrap });
    await services.catalog.createIndex("ten_d", { name: "doomed", serviceName: "ten_d-shop" });
    const write = services.records.put(admin, "doomed", "r1", { title: "Never" });
    await g.inside;
    await services.catalog.deleteIndex("ten_d", "doomed");
    g.release();
    await expect(write).rejects.toBeInstanceOf(NotFoundError);
  });

  test("a checkpoint whose index is deleted while the engine builds it is NotFound", async () => {
    const g = gated("checkpoint");
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
