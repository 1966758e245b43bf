// The catalog's lookup cache must agree with this process's own writes at once (issue 15,
// finding 9): a lookup that missed used to be cached for 5 s, so creating that index answered
// 500 and reads and writes to it answered 404 until the entry expired. The clock is frozen, so
// no entry ever expires during a test: only invalidation can make the cache agree.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import { NotFoundError } from "../../src/domain/errors.ts";
import { createLogger } from "../../src/log.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const TENANT = "ten_c";
const SERVICE = `${TENANT}-shop`;
const admin: Principal = { kind: "key", keyId: "key_c", tenantId: TENANT, type: "adm", userId: null };

describe.each(storeTargets())("catalog lookup cache on $name", (target) => {
  let services: TestServices;
  let catalog: CatalogService;

  beforeAll(async () => {
    services = await openServices(target, { tenantId: TENANT, now: () => 1_000 });
    catalog = services.catalog;
  });
  afterAll(() => services?.close());

  test("an index looked up while missing can be created, then read and written at once", async () => {
    await expect(catalog.getIndex(TENANT, "fresh")).rejects.toBeInstanceOf(NotFoundError);
    await expect(catalog.byServiceAndName(SERVICE, "fresh")).resolves.toBeUndefined();

    const created = await catalog.createIndex(TENANT, { name: "fresh", serviceName: SERVICE });
    expect(created).toMatchObject({ name: "fresh", serviceName: SERVICE, activeVersion: "0", records: 0 });

    await expect(catalog.getIndex(TENANT, "fresh")).resolves.toMatchObject({ name: "fresh" });
    await expect(catalog.byServiceAndName(SERVICE, "fresh")).resolves.toMatchObject({ name: "fresh" });
    const version = await services.records.put(admin, "fresh", "r1", { title: "Margherita" });
    await expect(services.records.get(admin, "fresh", "r1")).resolves.toMatchObject({ id: "r1", title: "Margherita" });
    await expect(catalog.getIndex(TENANT, "fresh")).resolves.toMatchObject({ activeVersion: version, records: 1 });
  });

  test("an index deleted and created again under its name is the new one at once", async () => {
    await catalog.createIndex(TENANT, { name: "again", serviceName: SERVICE });
    await services.records.put(admin, "again", "old", { title: "Old" });
    await catalog.getIndex(TENANT, "again"); // caches the ref of the first index

    await catalog.deleteIndex(TENANT, "again");
    await expect(catalog.getIndex(TENANT, "again")).rejects.toBeInstanceOf(NotFoundError);
    await expect(services.records.put(admin, "again", "old", { title: "Old" })).rejects.toBeInstanceOf(NotFoundError);

    await expect(catalog.createIndex(TENANT, { name: "again", serviceName: SERVICE })).resolves.toMatchObject({
      name: "again",
      records: 0,
    });
    await expect(services.records.get(admin, "again", "old")).rejects.toBeInstanceOf(NotFoundError);
    await services.records.put(admin, "again", "new", { title: "New" });
    await expect(services.records.get(admin, "again", "new")).resolves.toMatchObject({ id: "new" });
  });

  test("a create refused because another process made the name drops this process's cached miss", async () => {
    // A second catalog over the same store stands for another process.
    const other = new CatalogService(
      services.store.db,
      services.engine,
      createLogger("error", {}, () => {}),
      () => 1_000,
    );
    await expect(catalog.getIndex(TENANT, "elsewhere")).rejects.toBeInstanceOf(NotFoundError);
    await other.createIndex(TENANT, { name: "elsewhere", serviceName: SERVICE });

    await expect(catalog.createIndex(TENANT, { name: "elsewhere", serviceName: SERVICE })).rejects.toMatchObject({
      name: "ConflictError",
    });
    await expect(catalog.getIndex(TENANT, "elsewhere")).resolves.toMatchObject({ name: "elsewhere" });
    await services.records.put(admin, "elsewhere", "r1", { title: "Found" });
    await expect(services.records.get(admin, "elsewhere", "r1")).resolves.toMatchObject({ id: "r1" });
  });
});
