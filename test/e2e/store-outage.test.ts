// PostgreSQL unreachable for a while (issue 18: a region keeps answering searches with what it
// has cached, and says so in /readyz). The server reaches its database through a TCP proxy this
// test controls; closing the proxy refuses every connection, as a database that went away does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { Http } from "../support/http.ts";
import { type PostgresProxy, postgresProxy } from "../support/postgres-proxy.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { keyed } from "../support/regions.ts";
import { createKey, signUp } from "../support/world.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!process.env.DATABASE_URL)("the metadata store goes away", () => {
  let node: SiftProcess;
  let proxy: PostgresProxy;
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    database = await createTempDatabase(process.env.DATABASE_URL!);
    proxy = await postgresProxy(new URL(database.url));
    node = await siftProcess({}, { sharedDatabase: proxy.via(database.url) });
    await node.start();
  });
  afterAll(async () => {
    await node?.destroy();
    await proxy?.cut();
    await database?.drop();
  });

  it("searches go on from the cache, /readyz says the store is down, writes are 503", async () => {
    const session = await signUp(new Http(node.url), `outage-${Date.now()}@example.com`);
    const admin = keyed(node.url, await createKey(session, "adm"));
    const service = `outage-${process.pid}-${Date.now()}`;
    expect((await admin.post("/v1/services", { name: service })).status).toBe(201);
    expect((await admin.post("/v1/indexes", { name: "shop", serviceName: service, visibility: "PUBLIC" })).status).toBe(
      201,
    );
    expect((await admin.put("/v1/indexes/shop/records/lamp", { title: "Desk lamp" })).status).toBe(200);
    const search = () => fetch(`${node.url}/v1/search?query=desk&indexName=shop&serviceName=${service}`);
    expect((await (await search()).json()).suggestions[0].id).toBe("lamp");

    await proxy.cut();
    // Past the 5-second lifetime of a cached lookup: it is used because the store cannot answer.
    await sleep(6_000);
    // Requests that fail against the store meanwhile (as background work on a busy node does)
    // must not make the next one wait longer to learn that it is down (reconnectDelay).
    for (let i = 0; i < 8; i++) await admin.get("/v1/indexes/shop/versions");
    const asked = Date.now();
    const during = await search();
    expect(Date.now() - asked).toBeLessThan(3_000);
    expect(during.status).toBe(200);
    expect((await during.json()).suggestions[0].id).toBe("lamp");
    const ready = await fetch(`${node.url}/readyz`);
    expect(ready.status).toBe(503);
    expect((await ready.json()).checks.store).toBe(false);
    // A write needs the store: a clear 503, never a 500.
    const write = await admin.put("/v1/indexes/shop/records/chair", { title: "Chair" });
    expect(write.status, write.text).toBe(503);

    await proxy.open();
    await expect.poll(async () => (await fetch(`${node.url}/readyz`)).status, { timeout: 20_000 }).toBe(200);
    expect((await admin.put("/v1/indexes/shop/records/chair", { title: "Chair" })).status).toBe(200);
  }, 60_000);
});
