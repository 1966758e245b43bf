// Notices between nodes (D-343): a key revoked or an index's visibility set on one node holds on
// every other at once, whatever that node has cached and whatever its region's read replica still
// shows. Two services over one store stand for two nodes; a notice bus stands for NATS; a second
// store, a copy made at one moment, stands for a read replica whose replay is paused. The clocks are
// frozen, so no cache entry expires during a test: only the notices can make the nodes agree.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { NodeNotice, NodeNotices } from "../../src/ports/node-notices.ts";
import { ApiKeyService } from "../../src/services/api-keys.ts";
import { CatalogService } from "../../src/services/catalog.ts";
import { type Lookup, replicaFirst } from "../../src/store/lookup.ts";
import type { Store } from "../../src/store/open.ts";
import { apiKeys, indexes, services as serviceRows, tenants } from "../../src/store/schema.ts";
import { openServices, type TestServices } from "../support/services.ts";
import { storeTargets } from "../support/store.ts";

const TENANT = "ten_n";
const SERVICE = `${TENANT}-shop`;
const silent = createLogger("silent", {}, () => {});
const now = () => 1_000;

/**
 * Every node's notices reach every node, a moment later (as over NATS), the sender's too; a node
 * cut off (its connection to NATS down) neither sends nor hears any until it is mended.
 */
function noticeBus(): { node(): NodeNotices & { cut(): void; mend(): void }; settled(): Promise<void> } {
  const nodes: {
    listeners: ((notice: NodeNotice) => void)[];
    watchers: ((hearing: boolean) => void)[];
    up: boolean;
  }[] = [];
  let inFlight = Promise.resolve();
  return {
    node: () => {
      const self = {
        listeners: [] as ((notice: NodeNotice) => void)[],
        watchers: [] as ((h: boolean) => void)[],
        up: true,
      };
      nodes.push(self);
      const hearing = (up: boolean) => {
        self.up = up;
        for (const watcher of self.watchers) watcher(up);
      };
      return {
        send: (notice) => {
          if (!self.up) return;
          const copy = JSON.parse(JSON.stringify(notice)) as NodeNotice;
          inFlight = inFlight
            .then(() => new Promise((resolve) => setTimeout(resolve, 5)))
            .then(() => {
              for (const node of nodes) if (node.up) for (const listener of node.listeners) listener(copy);
            });
        },
        listen: (listener) => {
          self.listeners.push(listener);
        },
        watchHearing: (watcher) => {
          self.watchers.push(watcher);
        },
        cut: () => hearing(false),
        mend: () => hearing(true),
      };
    },
    settled: () => inFlight,
  };
}

/**
 * A read replica that stopped replaying: a second store holding the tenants, services, indexes and
 * keys as the primary has them now, read first (as DATABASE_READ_URL is), the primary only for a
 * row it lacks.
 */
async function pausedReplica(primary: Store, open: () => Promise<Store>): Promise<{ lookup: Lookup; store: Store }> {
  const store = await open();
  for (const table of [tenants, serviceRows, indexes, apiKeys]) {
    const rows = await primary.db.select().from(table);
    if (rows.length > 0)
      await store.db
        .insert(table)
        .values(rows as never)
        .onConflictDoNothing();
  }
  return { lookup: replicaFirst(primary.db, store.db, silent), store };
}

const refused = (promise: Promise<unknown>) =>
  promise.then(
    () => "accepted",
    (error: Error) => `${error.name}: ${error.message}`,
  );

describe.each(storeTargets())("notices between nodes on $name", (target) => {
  let services: TestServices;
  const replicas: Store[] = [];

  beforeAll(async () => {
    services = await openServices(target, { tenantId: TENANT, now });
  });
  afterAll(async () => {
    for (const replica of replicas) await replica.close();
    await services?.close();
  });

  test("a key revoked on one node is refused at once by another that had it cached", async () => {
    const bus = noticeBus();
    const here = new ApiKeyService(services.store.db, silent, now);
    const there = new ApiKeyService(services.store.db, silent, now);
    here.useNotices(bus.node());
    there.useNotices(bus.node());
    const made = await here.create(TENANT, "usr_n", { type: "srh", name: "widget" });
    await expect(there.authenticate(made.key)).resolves.toMatchObject({ keyId: made.id });

    await here.revoke(TENANT, made.id);
    expect(await refused(here.authenticate(made.key))).toBe("UnauthenticatedError: the API key has been revoked");
    await bus.settled();
    expect(await refused(there.authenticate(made.key))).toBe("UnauthenticatedError: the API key has been revoked");
  });

  test("a node that stopped hearing the others checks its cached keys again, at once when it hears again (D-347)", async () => {
    const bus = noticeBus();
    let clock = 1_000;
    const tick = () => clock;
    const here = new ApiKeyService(services.store.db, silent, tick);
    const there = new ApiKeyService(services.store.db, silent, tick);
    const link = bus.node();
    here.useNotices(bus.node());
    there.useNotices(link);
    const [first, second] = [
      await here.create(TENANT, "usr_n", { type: "srh", name: "first" }),
      await here.create(TENANT, "usr_n", { type: "srh", name: "second" }),
    ];
    for (const made of [first, second])
      await expect(there.authenticate(made.key)).resolves.toMatchObject({ keyId: made.id });

    // Cut off, it misses a revocation: its verification of the key now lasts 2 s, not 30.
    link.cut();
    await expect(there.authenticate(first.key)).resolves.toMatchObject({ keyId: first.id });
    await here.revoke(TENANT, first.id);
    await bus.settled();
    clock += 2_500;
    expect(await refused(there.authenticate(first.key))).toBe("UnauthenticatedError: the API key has been revoked");

    // Verified while cut off, revoked, and heard again before those 2 s are over: checked at once.
    await expect(there.authenticate(second.key)).resolves.toMatchObject({ keyId: second.id });
    await here.revoke(TENANT, second.id);
    await bus.settled();
    clock += 500;
    link.mend();
    expect(await refused(there.authenticate(second.key))).toBe("UnauthenticatedError: the API key has been revoked");
  });

  test("a key revoked is refused where the read replica still shows it usable, on either node", async () => {
    const bus = noticeBus();
    const made = await new ApiKeyService(services.store.db, silent, now).create(TENANT, "usr_n", {
      type: "srh",
      name: "widget",
    });
    const replica = await pausedReplica(services.store, target.open);
    replicas.push(replica.store);
    const here = new ApiKeyService(services.store.db, silent, now, replica.lookup);
    const there = new ApiKeyService(services.store.db, silent, now, replica.lookup);
    here.useNotices(bus.node());
    there.useNotices(bus.node());
    // Each replica has the key as it was made.
    await expect(here.authenticate(made.key)).resolves.toMatchObject({ keyId: made.id });
    await expect(there.authenticate(made.key)).resolves.toMatchObject({ keyId: made.id });

    await here.revoke(TENANT, made.id);
    await bus.settled();
    for (const node of [here, there]) {
      expect(await refused(node.authenticate(made.key))).toBe("UnauthenticatedError: the API key has been revoked");
    }
  });

  test("a node started after a revocation its paused replica has not replayed refuses the key", async () => {
    const made = await new ApiKeyService(services.store.db, silent, now).create(TENANT, "usr_n", {
      type: "srh",
      name: "widget",
    });
    const replica = await pausedReplica(services.store, target.open);
    replicas.push(replica.store);
    await new ApiKeyService(services.store.db, silent, now).revoke(TENANT, made.id);
    // No notice reaches a node that was not running: it reads the last hour's revocations as it starts.
    const started = new ApiKeyService(services.store.db, silent, now, replica.lookup);
    await expect(started.rememberRecentRevocations()).resolves.toBeGreaterThanOrEqual(1);
    expect(await refused(started.authenticate(made.key))).toBe("UnauthenticatedError: the API key has been revoked");
  });

  test("a node that hears the others again looks its cached indexes up again (D-347)", async () => {
    const bus = noticeBus();
    await services.catalog.createIndex(TENANT, { name: "shelf", serviceName: SERVICE, visibility: "PUBLIC" });
    const here = new CatalogService(services.store.db, services.engine, silent, now);
    const there = new CatalogService(services.store.db, services.engine, silent, now);
    const link = bus.node();
    here.useNotices(bus.node());
    there.useNotices(link);
    await expect(there.byServiceAndName(SERVICE, "shelf")).resolves.toMatchObject({ visibility: "PUBLIC" });
    // Made PRIVATE while it was cut off: it missed the notice, and its clock stands still.
    link.cut();
    await here.updateIndex(TENANT, "shelf", { visibility: "PRIVATE" });
    await bus.settled();
    await expect(there.byServiceAndName(SERVICE, "shelf")).resolves.toMatchObject({ visibility: "PUBLIC" });
    link.mend();
    await expect(there.byServiceAndName(SERVICE, "shelf")).resolves.toMatchObject({ visibility: "PRIVATE" });
  });

  test("an index made PRIVATE on one node is PRIVATE at once on both, their replica paused", async () => {
    const bus = noticeBus();
    await services.catalog.createIndex(TENANT, { name: "menu", serviceName: SERVICE, visibility: "PUBLIC" });
    const replica = await pausedReplica(services.store, target.open);
    replicas.push(replica.store);
    const [here, there] = [0, 1].map(
      () => new CatalogService(services.store.db, services.engine, silent, now, undefined, replica.lookup),
    ) as [CatalogService, CatalogService];
    here.useNotices(bus.node());
    there.useNotices(bus.node());
    await expect(there.byServiceAndName(SERVICE, "menu")).resolves.toMatchObject({ visibility: "PUBLIC" });

    await expect(here.updateIndex(TENANT, "menu", { visibility: "PRIVATE" })).resolves.toMatchObject({
      visibility: "PRIVATE",
    });
    await bus.settled();
    await expect(there.byServiceAndName(SERVICE, "menu")).resolves.toMatchObject({ visibility: "PRIVATE" });
    await expect(there.getIndex(TENANT, "menu")).resolves.toMatchObject({ visibility: "PRIVATE" });

    // And back, set on the other node this time.
    await there.updateIndex(TENANT, "menu", { visibility: "PUBLIC" });
    await bus.settled();
    await expect(here.byServiceAndName(SERVICE, "menu")).resolves.toMatchObject({ visibility: "PUBLIC" });
    await expect(there.byServiceAndName(SERVICE, "menu")).resolves.toMatchObject({ visibility: "PUBLIC" });
  });

  test("an index created on one node is found at once by another that had looked it up missing", async () => {
    const bus = noticeBus();
    const here = new CatalogService(services.store.db, services.engine, silent, now);
    const there = new CatalogService(services.store.db, services.engine, silent, now);
    here.useNotices(bus.node());
    there.useNotices(bus.node());
    await expect(there.byServiceAndName(SERVICE, "later")).resolves.toBeUndefined();

    await here.createIndex(TENANT, { name: "later", serviceName: SERVICE });
    await bus.settled();
    await expect(there.byServiceAndName(SERVICE, "later")).resolves.toMatchObject({ name: "later" });
  });
});
