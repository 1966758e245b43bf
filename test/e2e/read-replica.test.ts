// A region's read replica of the shared PostgreSQL (DATABASE_READ_URL, docs/replication.md): a
// private primary and its streaming replica, and a Sift node reading its request-path lookups
// (API keys, indexes by name) from the replica. A key made a moment ago that the replica does not
// have yet is read from the primary, and a key revoked that the replica still shows usable is
// refused; with the primary down, a key and an index the node never
// looked up are still found through the replica, so searches go on, after a restart too; writes
// answer 503.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Http } from "../support/http.ts";
import { type PostgresPair, postgresPairAvailable, startPostgresPair } from "../support/postgres.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { keyed } from "../support/regions.ts";
import { createKey, signUp } from "../support/world.ts";

describe.skipIf(!postgresPairAvailable)("a region that reads through a replica of the store", () => {
  let pair: PostgresPair;
  let node: SiftProcess;
  beforeAll(async () => {
    pair = await startPostgresPair();
    node = await siftProcess({ DATABASE_READ_URL: pair.replicaUrl }, { sharedDatabase: pair.primaryUrl });
    await node.start();
  }, 60_000);
  afterAll(async () => {
    await node?.destroy();
    pair?.stop();
  });

  /** Whether the replica has replayed the row of the key named `name`. */
  const replicaHasKey = (name: string) =>
    pair.onReplica(async (sql) => (await sql`select 1 from api_keys where name = ${name}`).length === 1);

  it("finds new keys on the primary, and keys and indexes on the replica while the primary is down", async () => {
    const session = await signUp(new Http(node.url), `replica-${Date.now()}@example.com`);
    const admin = keyed(node.url, await createKey(session, "adm"));
    const service = `replica-${process.pid}`;
    expect((await admin.post("/v1/services", { name: service })).status).toBe(201);
    for (const name of ["shop", "desk"]) {
      const made = await admin.post("/v1/indexes", { name, serviceName: service, visibility: "PRIVATE" });
      expect(made.status, made.text).toBe(201);
    }
    const lamp = await admin.put("/v1/indexes/shop/records/lamp", { title: "Desk lamp" });
    expect(lamp.status).toBe(200);
    expect((await admin.put("/v1/indexes/desk/records/oak", { title: "Oak desk" })).status).toBe(200);
    const search = (key: string, index: string, query: string) =>
      new Http(node.url).get(`/v1/search?query=${query}&indexName=${index}&serviceName=${service}`, { key });

    // The replica stops replaying once it has the index as the lamp left it: a key made now is on
    // the primary only, and works at once; a record written now is found, though the replica's row
    // of the index names the version before it.
    const replicaActive = () =>
      pair.onReplica(
        async (sql) => (await sql`select active_version from indexes where name = 'shop'`)[0]?.active_version,
      );
    await expect.poll(replicaActive, { timeout: 10_000 }).toBe(lamp.body.indexVersion);
    // And a key the replica has, which the node has verified.
    const doomed = await createKey(session, "svc", "doomed");
    await expect.poll(() => replicaHasKey("doomed"), { timeout: 10_000 }).toBe(true);
    expect((await search(doomed, "shop", "lamp")).status).toBe(200);
    await pair.onReplica((sql) => sql`select pg_wal_replay_pause()`);
    const fresh = await createKey(session, "svc", "fresh");
    expect((await admin.put("/v1/indexes/shop/records/bulb", { title: "Lamp bulb" })).status).toBe(200);
    expect(await replicaHasKey("fresh")).toBe(false);
    const found = await search(fresh, "shop", "bulb");
    expect(found.status, found.text).toBe(200);
    expect(found.body.suggestions.map((s: { id: string }) => s.id)).toEqual(["bulb"]);
    // Revoked on the primary, still usable on the replica: refused all the same (D-343).
    const keys = (await session.get("/v1/api-keys")).body as { id: string; name: string }[];
    const doomedId = keys.find((k) => k.name === "doomed")!.id;
    expect((await session.delete(`/v1/api-keys/${doomedId}`)).status).toBe(200);
    const refused = await search(doomed, "shop", "lamp");
    expect(refused.status, refused.text).toBe(401);
    expect(refused.body.detail).toBe("the API key has been revoked");
    // Restarted, the node heard of it from no one: it read the last hour's revocations as it started.
    await node.kill("SIGKILL");
    await node.start();
    const afterRestart = await search(doomed, "shop", "lamp");
    expect(afterRestart.status, afterRestart.text).toBe(401);
    await pair.onReplica((sql) => sql`select pg_wal_replay_resume()`);

    // A key this node never verified, and an index it never looked up by service: once the
    // replica has them, the primary goes down, and a search with them still answers.
    const unused = await createKey(session, "svc", "unused");
    await expect.poll(() => replicaHasKey("unused"), { timeout: 10_000 }).toBe(true);
    pair.stopPrimary();
    const during = await search(unused, "desk", "oak");
    expect(during.status, during.text).toBe(200);
    expect(during.body.suggestions[0].id).toBe("oak");
    const ready = await new Http(node.url).get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks.store).toBe(false);
    // A write needs the primary: a clear 503, never a 500.
    const write = await admin.put("/v1/indexes/desk/records/pine", { title: "Pine desk" });
    expect(write.status, write.text).toBe(503);

    // Restarted while the primary is down, the node starts on the replica, whose schema is
    // current (D-276): it used to exit, failing its migrations. Its lookups are all new now.
    await node.kill("SIGKILL");
    await node.start();
    const restarted = await search(unused, "shop", "lamp");
    expect(restarted.status, restarted.text).toBe(200);
    expect(restarted.body.suggestions.map((s: { id: string }) => s.id).sort()).toEqual(["bulb", "lamp"]);
    expect((await new Http(node.url).get("/readyz")).body.checks.store).toBe(false);

    pair.startPrimary();
    await expect.poll(async () => (await new Http(node.url).get("/readyz")).status, { timeout: 20_000 }).toBe(200);
    expect((await new Http(node.url).get("/readyz")).body.checks).toMatchObject({ store: true, readReplica: true });
    expect((await admin.put("/v1/indexes/desk/records/pine", { title: "Pine desk" })).status).toBe(200);

    // The replica down: /readyz says so and stays ready, and lookups go to the primary.
    pair.stopReplica();
    const late = await createKey(session, "svc", "late");
    const viaPrimary = await search(late, "desk", "pine");
    expect(viaPrimary.status, viaPrimary.text).toBe(200);
    expect(viaPrimary.body.suggestions[0].id).toBe("pine");
    const withoutReplica = await new Http(node.url).get("/readyz");
    expect(withoutReplica.status).toBe(200);
    expect(withoutReplica.body.checks).toMatchObject({ store: true, readReplica: false });
  }, 90_000);
});
