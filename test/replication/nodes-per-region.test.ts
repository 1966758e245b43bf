// Several Sift nodes in one region (docs/replication.md, A real deployment): the nodes behind a
// region's endpoint are interchangeable, so each request of a client may reach any of them, the
// steps of one upload included.
import { describe, expect, it } from "vitest";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { Http } from "../support/http.ts";
import { siftProcess } from "../support/process.ts";
import { logRegionsOnFailure, readBack, regionsAvailable, startCaughtUp, useRegions } from "../support/regions.ts";

describe.skipIf(!regionsAvailable)("two nodes in one region, and another region", () => {
  // frankfurt-a, frankfurt-b, london: each with its own data directory, as on its own machine.
  // A node silent for 6 s is gone (positions reported every 2 s), and uploads are swept each second.
  const regions = useRegions(["frankfurt/a", "frankfurt/b", "london"], {
    SIFT_REPLICATION_NODE_GONE_MS: "6000",
    SIFT_RETENTION_EVERY_SECONDS: "1",
  });

  it("a write through either node of the region is read on the other and in the other region", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    for (const [from, others] of [
      [0, [1, 2]],
      [1, [0, 2]],
    ] as const) {
      const put = await r.http(from).put(`/v1/indexes/${r.index}/records/n-${from}`, { title: `Written on ${from}` });
      expect(put.status, put.text).toBe(200);
      for (const node of others) {
        expect(await readBack(r, node, `n-${from}`, put.body.indexVersion as string)).toBe(`Written on ${from}`);
      }
    }
  });

  it("an upload started on one node, sent to the other and completed on the first is everywhere", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    const started = await r.http(0).post("/v1/uploads/start", { indexName: r.index });
    expect(started.status, started.text).toBe(200);
    const version = started.body.indexVersion as string;
    // The region's load balancer sends the bytes to the other node: the same path and query.
    const url = new URL(started.body.uploadUrl as string);
    expect(url.origin).toBe(r.nodes[0]!.url);
    const csv = "id,title\nlb-1,Lantern from the other node\nlb-2,Ladder from the other node\n";
    const put = await fetch(`${r.nodes[1]!.url}${url.pathname}${url.search}`, { method: "PUT", body: csv });
    expect(put.status, await put.text()).toBe(200);
    const completed = await r.http(0).post("/v1/uploads/complete", { indexName: r.index, indexVersion: version });
    expect(completed.status, completed.text).toBe(200);
    // The node that holds the bytes ingests them; either node reports the same state.
    await expect
      .poll(async () => (await r.http(0).get(`/v1/uploads/${r.index}/${version}`)).body.state, { timeout: 30_000 })
      .toBe("succeeded");
    for (const node of [0, 1, 2]) {
      await expect
        .poll(async () => (await r.http(node).get(`/v1/indexes/${r.index}/records/lb-2`)).body.title, {
          timeout: 20_000,
        })
        .toBe("Ladder from the other node");
    }
  });

  it("wrong passwords count together on both nodes of the region", async () => {
    const r = regions();
    const [a, b] = [new Http(r.nodes[0]!.url), new Http(r.nodes[1]!.url)];
    const email = `nodes-${process.pid}@x.example`;
    const password = "correct horse battery staple";
    expect((await a.fresh().post("/v1/auth/signup", { email, password })).status).toBe(201);
    // The load balancer spreads the guesses: five wrong ones, alternately on each node.
    for (let i = 0; i < 5; i++) {
      const wrong = await (i % 2 ? b : a).fresh().post("/v1/auth/login", { email, password: `wrong ${i}` });
      expect(wrong.status, wrong.text).toBe(401);
    }
    expect((await b.fresh().post("/v1/auth/login", { email, password: "wrong again" })).status).toBe(401);
    // The sixth counted on both: either node now holds even the right password back.
    for (const node of [a, b]) {
      const held = await node.fresh().post("/v1/auth/login", { email, password });
      expect(held.status, held.text).toBe(429);
    }
  });

  it("a key revoked and an index made PRIVATE on one node hold at once on every node (D-343)", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    const made = await r.session.post("/v1/api-keys", { type: "srh", name: "widget" });
    expect(made.status, made.text).toBe(200);
    const query = `/v1/search?query=lamp&indexName=${r.index}&serviceName=${r.service}`;
    const search = (node: number, key?: string) => new Http(r.nodes[node]!.url).get(query, key ? { key } : {});
    // Every node verifies the key and looks the index up: both cached there (30 s and 5 s).
    for (const node of [0, 1, 2]) {
      expect((await search(node, made.body.key)).status).toBe(200);
      expect((await search(node)).status).toBe(200);
    }

    // Within 2 s on the others (the notice crosses NATS), far inside what they cached.
    const revoked = await r.session.delete(`/v1/api-keys/${made.body.id}`);
    expect(revoked.status, revoked.text).toBe(200);
    for (const node of [0, 1, 2]) {
      await expect.poll(async () => (await search(node, made.body.key)).status, { timeout: 2_000 }).toBe(401);
    }
    const hidden = await r.http(0).patch(`/v1/indexes/${r.index}`, { visibility: "PRIVATE" });
    expect(hidden.status, hidden.text).toBe(200);
    try {
      for (const node of [0, 1, 2]) {
        await expect.poll(async () => (await search(node)).status, { timeout: 2_000 }).toBe(401);
      }
    } finally {
      expect((await r.http(0).patch(`/v1/indexes/${r.index}`, { visibility: "PUBLIC" })).status).toBe(200);
    }
  });

  // Last: it stops frankfurt-b for a while.
  it("an upload whose file is on a node that stopped for good is failed by the other node", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    const started = await r.http(0).post("/v1/uploads/start", { indexName: r.index });
    const version = started.body.indexVersion as string;
    const url = new URL(started.body.uploadUrl as string);
    const put = await fetch(`${r.nodes[1]!.url}${url.pathname}${url.search}`, {
      method: "PUT",
      body: "id,title\ngone-1,On a lost disk\n",
    });
    expect(put.status).toBe(200);
    const files = () =>
      readdirSync(join(r.nodes[1]!.dataDir, "blobs"), { recursive: true, withFileTypes: true }).filter((f) =>
        f.isFile(),
      ).length;
    expect(files()).toBe(1);
    // Its node dies before the upload is completed: only it holds the file.
    await r.nodes[1]!.kill("SIGKILL");
    expect((await r.http(0).post("/v1/uploads/complete", { indexName: r.index, indexVersion: version })).status).toBe(
      200,
    );
    await expect
      .poll(async () => (await r.http(0).get(`/v1/uploads/${r.index}/${version}`)).body, { timeout: 30_000 })
      .toMatchObject({
        state: "failed",
        failureReason: expect.stringMatching(/stopped for good before its ingest finished/),
      });
    // Back, it removes the file.
    await startCaughtUp(r.nodes[1]!);
    await expect.poll(files, { timeout: 10_000 }).toBe(0);
  });

  it("a node started without SIFT_NATS_URL on their database does not start, and says why (D-325)", async () => {
    const r = regions();
    // The setting forgotten on one more node: it would write apart from the others.
    const stray = await siftProcess({ SIFT_SOLE_PROCESS_WAIT_SECONDS: "1" }, { sharedDatabase: r.databaseUrl });
    try {
      // start() waits for a health check this process never answers.
      // biome-ignore lint/plugin: this start is expected to fail; the exit code and output are what is checked.
      void stray.start().catch(() => {});
      expect(await stray.exited()).toBe(1);
      expect(stray.output()).toMatch(
        /Sift nodes with replication use this database .*set SIFT_NATS_URL on this process too/,
      );
    } finally {
      await stray.destroy();
    }
    expect((await r.http(0).get(`/v1/indexes/${r.index}`)).status).toBe(200);
  });
});
