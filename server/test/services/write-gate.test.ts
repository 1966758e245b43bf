// One tenant's writes are bounded (issue 15, finding 7): with SIFT_WRITES_PER_TENANT at 1, a
// tenant writing to three indexes at once has one write in progress and the others waiting,
// while another tenant's write goes straight through. Before, all three ran at once and filled
// the event loop ahead of everyone else's requests.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import type { RecordChange, SearchEngine } from "../../src/ports/engine.ts";
import { tenants } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const keyOf = (tenantId: string): Principal => ({
  kind: "key",
  keyId: `key_${tenantId}`,
  tenantId,
  type: "adm",
  userId: null,
});

describe.each(storeTargets())("writes per tenant on $name", (target) => {
  let services: TestServices;
  /** Index keys of tenant a, whose engine writes are held until released. */
  const held = new Set<string>();
  let release: () => void = () => {};
  let gateOpen = new Promise<void>((r) => (release = r));
  let inFlight = 0;
  let mostInFlight = 0;

  beforeAll(async () => {
    services = await openServices(target, {
      tenantId: "ten_a",
      policy: { writesPerTenant: 1 },
      engine: (real: SearchEngine) =>
        Object.assign(Object.create(real) as SearchEngine, {
          // Record writes reach the engine as group commits of the writes queued on an index.
          applyChanges: async (key: string, changes: RecordChange[]) => {
            if (!held.has(key)) return real.applyChanges!(key, changes);
            mostInFlight = Math.max(mostInFlight, ++inFlight);
            await gateOpen;
            inFlight--;
            return real.applyChanges!(key, changes);
          },
        }),
    });
    await services.store.db.insert(tenants).values({ id: "ten_b", name: "ten_b", createdAt: 0 });
    await services.catalog.createService("ten_b", { name: "ten_b-shop", regions: ["frankfurt"] });
    for (const name of ["one", "two", "three"]) {
      await services.catalog.createIndex("ten_a", { name, serviceName: "ten_a-shop" });
      held.add((await services.catalog.byName("ten_a", name))!.id);
    }
    await services.catalog.createIndex("ten_b", { name: "other", serviceName: "ten_b-shop" });
  });
  afterAll(() => services?.close());

  test("one tenant's writes to three indexes run one at a time; another tenant's write is not held", async () => {
    const { records } = services;
    const a = ["one", "two", "three"].map((index) => records.put(keyOf("ten_a"), index, "r", { title: index }));
    await new Promise((r) => setTimeout(r, 200));
    expect(inFlight).toBe(1);
    // Tenant b writes and reads back while all of tenant a's writes are still held or waiting.
    expect(await records.put(keyOf("ten_b"), "other", "r", { title: "Other" })).toBe("0.1");
    expect((await records.get(keyOf("ten_b"), "other", "r")).title).toBe("Other");
    release();
    expect(await Promise.all(a)).toEqual(["0.1", "0.1", "0.1"]);
    expect(mostInFlight).toBe(1);
    gateOpen = Promise.resolve();
  });
});
