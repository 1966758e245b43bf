// PostgreSQL unreachable for a while (issue 18: a region keeps answering searches with what it
// has cached, and says so in /readyz). The server reaches its database through a TCP proxy this
// test controls; closing the proxy refuses every connection, as a database that went away does.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { Http } from "../support/http.ts";
import { type PostgresProxy, postgresProxy } from "../support/postgres-proxy.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { keyed } from "../support/regions.ts";
import { PASSWORD, createKey, signUp } from "../support/world.ts";

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

  /** A new tenant's PUBLIC index holding one record, made while the store answers. */
  const publicIndex = async (label: string, index: string, record: { id: string; title: string }) => {
    const email = `${label}-${Date.now()}@example.com`;
    const session = await signUp(new Http(node.url), email);
    const admin = keyed(node.url, await createKey(session, "adm"));
    const service = `${label}-${process.pid}-${Date.now()}`;
    expect((await admin.post("/v1/services", { name: service })).status).toBe(201);
    const made = await admin.post("/v1/indexes", { name: index, serviceName: service, visibility: "PUBLIC" });
    expect(made.status).toBe(201);
    expect((await admin.put(`/v1/indexes/${index}/records/${record.id}`, { title: record.title })).status).toBe(200);
    return { email, session, admin, service };
  };

  it("searches go on from the cache, /readyz says the store is down, writes are 503", async () => {
    const { admin, service } = await publicIndex("outage", "shop", { id: "lamp", title: "Desk lamp" });
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

  it("one that hangs: searches go on from the cache within seconds, and /readyz says so (D-350)", async () => {
    const { email, session, admin, service } = await publicIndex("hang", "desk", {
      id: "pen",
      title: "Fountain pen",
    });
    const signIn = () => new Http(node.url).fresh().post("/v1/auth/login", { email, password: PASSWORD });
    const createDrawer = () => admin.post("/v1/indexes", { name: "drawer", serviceName: service });
    const search = (key?: string) =>
      fetch(`${node.url}/v1/search?query=fountain&indexName=desk&serviceName=${service}`, {
        headers: key ? { authorization: `Bearer ${key}` } : {},
      });
    expect((await (await search()).json()).suggestions[0].id).toBe("pen");
    // A key made now and first used while the store hangs: nothing cached to answer from.
    const unseen = await createKey(session, "srh", "unseen");
    // An upload whose file is sent while the store hangs.
    const { uploadUrl } = (await admin.post("/v1/uploads/start", { indexName: "desk" })).body as { uploadUrl: string };
    const file = '{"id":"quill","title":"Quill"}\n';
    const putFile = () => fetch(uploadUrl, { method: "PUT", body: file });

    // Connections stay open and silent: no query fails, none is answered.
    proxy.hang();
    let hungWrites: { id: string; status: number; ms: number; detail: string }[] = [];
    try {
      await sleep(6_000);
      const timed = async <T>(request: () => Promise<T>) => {
        const asked = Date.now();
        const answer = await request();
        return { answer, ms: Date.now() - asked };
      };
      const during = await timed(() => search());
      expect(during.ms).toBeLessThan(5_000);
      expect(during.answer.status).toBe(200);
      expect((await during.answer.json()).suggestions[0].id).toBe("pen");
      const refused = await timed(() => search(unseen));
      expect(refused.ms).toBeLessThan(5_000);
      expect(refused.answer.status).toBe(503);
      const ready = await timed(() => fetch(`${node.url}/readyz`));
      expect(ready.ms).toBeLessThan(5_000);
      expect(ready.answer.status).toBe(503);
      expect((await ready.answer.json()).checks.store).toBe(false);

      // Record writes wait 10 s for the store, then answer 503 (D-356), the one queued behind
      // the first too: each says whether it may still be applied.
      // So do a sign-in, an upload's start, an index's creation (which reads its service's row
      // first: nothing is applied), a dashboard's read through its session and a version listing
      // (D-360), and the PUT of an upload's file (D-362), asked meanwhile.
      const control = Promise.all(
        [
          signIn,
          () => admin.post("/v1/uploads/start", { indexName: "desk" }),
          createDrawer,
          () => session.get("/v1/api-keys"),
          () => admin.get("/v1/indexes/desk/versions"),
          async () => {
            const put = await putFile();
            return { status: put.status, headers: put.headers, body: await put.json(), text: "" };
          },
        ].map(timed),
      );
      hungWrites = await Promise.all(
        ["ink", "cap"].map(async (id) => {
          const { answer, ms } = await timed(() => admin.put(`/v1/indexes/desk/records/${id}`, { title: id }));
          return { id, status: answer.status, ms, detail: (answer.body as { detail: string }).detail };
        }),
      );
      for (const write of hungWrites) {
        expect(write.status, write.detail).toBe(503);
        expect(write.ms).toBeGreaterThanOrEqual(9_000);
        expect(write.ms).toBeLessThan(15_000);
        expect(write.detail).toMatch(/^the metadata store did not answer within 10 s; this write /);
      }
      const answers = await control;
      for (const { answer, ms } of answers) {
        expect(answer.status, answer.text).toBe(503);
        expect(answer.headers.get("retry-after")).toBe("5");
        expect(ms).toBeGreaterThanOrEqual(9_000);
        expect(ms).toBeLessThan(15_000);
      }
      const changes =
        /^the metadata store did not answer within 10 s; this change is applied if the store records it when it answers/;
      const details = answers.map(({ answer }) => (answer.body as { detail: string }).detail);
      for (const detail of details.slice(0, 2)) expect(detail).toMatch(changes);
      for (const detail of details.slice(2))
        expect(detail).toBe("the metadata store did not answer within 10 s; try again shortly");
    } finally {
      proxy.resume();
    }
    await expect.poll(async () => (await fetch(`${node.url}/readyz`)).status, { timeout: 20_000 }).toBe(200);
    expect((await admin.put("/v1/indexes/desk/records/nib", { title: "Nib" })).status).toBe(200);
    // A write told it was not applied never is, once the store answers; one told it may be is
    // either there or not, and the store's versions agree with what is served: the empty first
    // version, "pen", each hung write served, "nib".
    await sleep(1_000);
    let served = 0;
    for (const write of hungWrites) {
      const read = await admin.get(`/v1/indexes/desk/records/${write.id}`);
      if (write.detail.includes("was not applied")) expect(read.status, write.id).toBe(404);
      else expect([200, 404]).toContain(read.status);
      if (read.status === 200) served++;
    }
    const listed = (await admin.get("/v1/indexes/desk/versions")).body as { versions: { state: string }[] };
    expect(listed.versions.filter((v) => v.state !== "pending")).toHaveLength(3 + served);
    // The upload started before the store hung, and the one started while it hung if the store
    // recorded it.
    const pending = listed.versions.filter((v) => v.state === "pending").length;
    expect(pending).toBeGreaterThanOrEqual(1);
    expect(pending).toBeLessThanOrEqual(2);
    // The file refused while the store hung is taken now.
    const put = await putFile();
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ bytes: file.length });
    expect((await admin.put("/v1/indexes/desk/records/ink", { title: "Ink" })).status).toBe(200);
    expect((await admin.get("/v1/indexes/desk/records/ink")).body.title).toBe("Ink");
    // The sign-in and the session work again; the index the store recorded late is there or not,
    // and a second create says which.
    expect((await signIn()).status).toBe(200);
    expect((await session.get("/v1/api-keys")).status).toBe(200);
    const drawer = (await admin.get("/v1/indexes/drawer")).status;
    expect([200, 404]).toContain(drawer);
    expect((await createDrawer()).status).toBe(drawer === 200 ? 409 : 201);
  }, 120_000);
});
