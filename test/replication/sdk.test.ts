// The SDK across three real regions (issue 18): a client with regions: "discover" reads its own
// writes in a region other than the one that took them, and keeps searching with zero failures
// while the region it prefers is killed with SIGKILL.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createClient, type SearchResponse, SiftUnreachableError } from "@sift/sdk";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Http } from "../support/http.ts";
import { regionsAvailable, useRegions } from "../support/regions.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!regionsAvailable)("the SDK across three regions", () => {
  const regions = useRegions();

  it("reads its own writes in another region: minVersion goes with every search after a write", async () => {
    const r = regions();
    const sent: { url: URL; region: string | null }[] = [];
    const sift = createClient({
      baseUrl: r.nodes[0]!.url,
      apiKey: r.key,
      regions: "discover",
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        sent.push({ url: new URL(String(input)), region: response.headers.get("x-sift-region") });
        return response;
      },
    });
    const preferred = (await sift.router.hosts())[0]!;
    const writer = r.regionIds[r.nodes.findIndex((n) => n.url === preferred.url)]!;
    const reader = r.regionIds.find((id) => id !== writer)!;
    for (let n = 0; n < 20; n++) {
      const title = `Watering can ${n}`;
      // The write goes to the region the client prefers; the search right after it to another one.
      const { indexVersion } = await sift.records.put(r.index, `can-${n}`, { title, weight: n + 1 });
      const page = await sift.search({ query: title, indexName: r.index, serviceName: r.service, regionId: reader });
      const search = sent.at(-1)!;
      expect([search.region, search.url.searchParams.get("minVersion")]).toEqual([reader, indexVersion]);
      expect(page.indexVersion).toBe(indexVersion);
      expect(page.suggestions.map((s) => s.title)).toContain(title);
    }
    // Every write went to the preferred region.
    const writes = sent.filter((s) => s.url.pathname.includes("/records/"));
    expect(new Set(writes.map((s) => s.url.origin))).toEqual(new Set([preferred.url]));
    // Asked of another region's server, a forced region is refused there, naming its endpoint (D-384).
    const other = r.nodes.findIndex((n) => n.url !== r.nodes[r.regionIds.indexOf(reader)]!.url);
    const misdirected = await r
      .http(other)
      .get(`/v1/search?query=can&indexName=${r.index}&serviceName=${r.service}&regionId=${reader}`);
    expect(misdirected.status, misdirected.text).toBe(400);
    expect(misdirected.body.errors).toEqual([
      {
        field: "regionId",
        message: `this is ${r.regionIds[other]}'s endpoint; ${reader} answers at ${r.nodes[r.regionIds.indexOf(reader)]!.url}`,
      },
    ]);
  });

  it("holds an index only in its service's regions; the SDK finds them from a 421 (D-385)", async () => {
    const r = regions();
    const [frankfurt, london, newark] = [0, 1, 2].map((n) => r.nodes[n]!.url) as [string, string, string];
    expect(r.regionIds).toEqual(["frankfurt", "london", "newark"]);
    const admin = r.http(0);
    const service = `placed-${process.pid}-${Date.now()}`;
    expect((await admin.post("/v1/services", { name: service, regions: ["frankfurt", "london"] })).status).toBe(201);
    const made = await admin.post("/v1/indexes", { name: "placed", serviceName: service, visibility: "PUBLIC" });
    expect(made.status, made.text).toBe(201);
    let indexVersion = "";
    for (let n = 0; n < 5; n++) {
      const put = await admin.put(`/v1/indexes/placed/records/rake-${n}`, { title: `Garden rake ${n}` });
      expect(put.status, put.text).toBe(200);
      indexVersion = put.body.indexVersion;
    }
    const search = `/v1/search?query=rake&indexName=placed&serviceName=${service}&minVersion=${indexVersion}`;
    const inLondon = await r.http(1).get(search);
    expect([inLondon.status, inLondon.body.totalHits]).toEqual([200, 5]);
    // Newark is not among the service's regions: it refuses, naming those that hold the index.
    for (const refused of [
      await r.http(2).get(search),
      await r.http(2).put("/v1/indexes/placed/records/x", { title: "X" }),
      await r.http(2).get("/v1/indexes/placed/records/rake-1"),
      await r.http(2).get("/v1/indexes/placed/versions"),
      await r.http(2).post("/v1/uploads/start", { indexName: "placed" }),
    ]) {
      expect(refused.status, refused.text).toBe(421);
      expect(refused.body.regions).toEqual([
        { id: "frankfurt", url: frankfurt },
        { id: "london", url: london },
      ]);
    }
    // It keeps nothing of it (what it took of its creation goes with its first write), and does
    // not report it; Frankfurt does.
    const indexDirs = (node: number) => readdirSync(join(r.nodes[node]!.dataDir, "engine", "segments"));
    let onlyHeld: string[] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(50)) {
      onlyHeld = indexDirs(0).filter((dir) => !indexDirs(2).includes(dir));
      if (onlyHeld.length === 1) break;
    }
    expect(onlyHeld).toHaveLength(1);
    expect(indexDirs(1)).toContain(onlyHeld[0]);
    // An upload's files are built in Frankfurt and opened in London; Newark does not fetch them.
    const started = await admin.post("/v1/uploads/start", { indexName: "placed" });
    expect(started.status, started.text).toBe(200);
    const csv = ["id,title", ...Array.from({ length: 200 }, (_, i) => `hoe-${i},Garden hoe ${i}`)].join("\n");
    expect((await fetch(started.body.uploadUrl, { method: "PUT", body: csv })).status).toBe(200);
    const bulk = started.body.indexVersion as string;
    expect((await admin.post("/v1/uploads/complete", { indexName: "placed", indexVersion: bulk })).status).toBe(200);
    await expect
      .poll(async () => (await admin.get(`/v1/uploads/placed/${bulk}`)).body.state, { timeout: 30_000 })
      .toBe("succeeded");
    const hoes = await r.http(1).get(`/v1/search?query=hoe&indexName=placed&serviceName=${service}&minVersion=${bulk}`);
    expect([hoes.status, hoes.body.totalHits]).toEqual([200, 200]);
    await sleep(500);
    const prefetched = (node: number) => readdirSync(join(r.nodes[node]!.dataDir, "prefetch")).join(" ");
    // (A segments folder is named by its index's id in base64url.)
    const placedId = Buffer.from(onlyHeld[0]!, "base64url").toString();
    expect(placedId).toMatch(/^idx_/);
    expect(prefetched(2)).not.toContain(placedId);
    expect(indexDirs(2)).not.toContain(onlyHeld[0]);
    const reported = async (node: number) =>
      ((await r.http(node).get("/v1/regions?scope=self")).body.regions[0].indexes as { indexName: string }[]).map(
        (i) => i.indexName,
      );
    expect(await reported(0)).toContain("placed");
    expect(await reported(2)).not.toContain("placed");
    // Its description is answered everywhere; where it does not hold the index, it says where it is.
    expect((await r.http(2).get("/v1/indexes/placed")).body).toMatchObject({
      name: "placed",
      serviceName: service,
      heldIn: [
        { id: "frankfurt", url: frankfurt },
        { id: "london", url: london },
      ],
    });
    expect((await r.http(0).get("/v1/indexes/placed")).body).not.toHaveProperty("heldIn");
    // An MCP host connected to Newark is told which MCP endpoints to connect to instead.
    const mcpCall = async (url: string, name: string, args: Record<string, unknown>) => {
      const client = new Client({ name: "placement-test", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${r.key}` } },
        }),
      );
      try {
        return (await client.callTool({ name, arguments: args })) as {
          isError?: boolean;
          content: { text: string }[];
          structuredContent?: Record<string, unknown>;
        };
      } finally {
        await client.close();
      }
    };
    const mcp = (url: string) => mcpCall(url, "search", { indexName: "placed", phrase: "hoe" });
    const listedByMcp = async (url: string) =>
      (await mcpCall(url, "listIndexes", {})).structuredContent as {
        indexes: { name: string }[];
        elsewhere?: { name: string; regions: unknown[] }[];
      };
    // Its list names the index apart, with the MCP endpoints that search it (D-391).
    const atNewarkMcp = await listedByMcp(newark);
    expect(atNewarkMcp.indexes.map((i) => i.name)).not.toContain("placed");
    expect(atNewarkMcp.elsewhere?.find((i) => i.name === "placed")).toEqual({
      name: "placed",
      serviceName: service,
      regions: [
        { region: "frankfurt", mcpEndpoint: `${frankfurt}/mcp` },
        { region: "london", mcpEndpoint: `${london}/mcp` },
      ],
    });
    const atLondonMcp = await listedByMcp(london);
    expect(atLondonMcp.indexes.map((i) => i.name)).toContain("placed");
    expect(atLondonMcp.elsewhere ?? []).toEqual([]);
    const refusedByMcp = await mcp(newark);
    expect([refusedByMcp.isError, refusedByMcp.content[0]!.text]).toEqual([
      true,
      `index "placed" is kept in frankfurt and london only, not in the region of this MCP endpoint: connect to ${frankfurt}/mcp or ${london}/mcp to search it`,
    ]);
    expect((await mcp(london)).structuredContent?.totalHits).toBe(200);
    // A dashboard session made in one region is good in the others (the store is shared), so a
    // cookie set for their parent domain signs the user in wherever a link leads (D-387).
    const [atFrankfurt, atLondon, atNewark] = [frankfurt, london, newark].map((url) => new Http(url));
    const account = { email: `placed-${process.pid}@sift.test`, password: "correct horse battery staple" };
    expect((await atFrankfurt!.post("/v1/auth/signup", account)).status).toBe(201);
    const cookie = { headers: { cookie: `sift_session=${atFrankfurt!.sessionCookie}` }, cookies: false };
    expect((await atNewark!.get("/v1/auth/me", cookie)).body.user.email).toBe(account.email);
    expect((await atLondon!.post("/v1/auth/logout", undefined, cookie)).status).toBe(204);
    expect((await atNewark!.get("/v1/auth/me", cookie)).status).toBe(401);

    // A client that measures Newark closest asks it once, then goes to the regions that hold the index.
    const asked: string[] = [];
    const sift = createClient({
      baseUrl: newark,
      apiKey: r.key,
      regions: [
        { id: "newark", url: newark },
        { id: "frankfurt", url: frankfurt },
      ],
      fetch: async (input, init) => {
        const target = new URL(String(input));
        if (target.pathname === "/healthz" && target.origin !== newark) await sleep(250);
        else if (target.pathname !== "/healthz") asked.push(target.origin === newark ? "newark" : "frankfurt");
        return fetch(input, init);
      },
    });
    expect((await sift.router.hosts())[0]!.url).toBe(newark);
    for (let n = 0; n < 3; n++) {
      const page = await sift.search({ query: "hoe", indexName: "placed", serviceName: service });
      expect(page.totalHits).toBe(200);
    }
    await sift.records.put("placed", "rake-5", { title: "Garden rake 5" });
    expect(asked).toEqual(["newark", "frankfurt", "frankfurt", "frankfurt", "newark", "frankfurt"]);
    // In a multi-search Newark answers what it holds; the search it refuses is asked alone, where it is held.
    const [placedHoes, cans] = await sift.multiSearch([
      { query: "hoe", indexName: "placed", serviceName: service },
      { query: "watering can", indexName: r.index, serviceName: r.service },
    ]);
    expect(placedHoes).toMatchObject({ totalHits: 200, region: "frankfurt" });
    expect(cans).toMatchObject({ totalHits: 20, region: "newark" });
  });

  it("keeps 32 concurrent searches going with zero failures while the preferred region is killed", async () => {
    const r = regions();
    const admin = r.http(0);
    let indexVersion = "";
    for (let n = 0; n < 10; n++) {
      const put = await admin.put(`/v1/indexes/${r.index}/records/hose-${n}`, {
        title: `Garden hose ${n}`,
        weight: n + 1,
      });
      expect(put.status, put.text).toBe(200);
      indexVersion = put.body.indexVersion;
    }
    // Every region serves the records before the run starts.
    for (const node of [1, 2]) {
      const ready = await r
        .http(node)
        .get(`/v1/search?query=garden&indexName=${r.index}&serviceName=${r.service}&minVersion=${indexVersion}`);
      expect(ready.status, ready.text).toBe(200);
    }

    const sift = createClient({ baseUrl: r.nodes[0]!.url, apiKey: r.key, regions: "discover", timeoutMs: 5_000 });
    const preferred = (await sift.router.hosts())[0]!;
    const victim = r.nodes.find((n) => n.url === preferred.url)!;
    let searching = true;
    let killedAt = Number.POSITIVE_INFINITY;
    const failures: string[] = [];
    const wrong: string[] = [];
    let before = 0;
    let after = 0;
    const loop = async () => {
      while (searching) {
        try {
          const page: SearchResponse = await sift.search({
            query: "garden",
            indexName: r.index,
            serviceName: r.service,
          });
          // An answer from a region without the data would be a silent failure: 10 hoses, always.
          if (page.totalHits !== 10) wrong.push(`${page.totalHits} hits`);
          if (Date.now() > killedAt) after++;
          else before++;
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    };
    const loops = Array.from({ length: 32 }, loop);
    await sleep(1_500);
    killedAt = Date.now();
    await victim.kill("SIGKILL");
    await sleep(3_000);
    searching = false;
    await Promise.all(loops);

    expect(failures).toEqual([]);
    expect(wrong).toEqual([]);
    expect(before).toBeGreaterThan(32);
    expect(after).toBeGreaterThan(32);
    // The killed region is set aside; the client now prefers a live one.
    const hosts = await sift.router.hosts();
    expect(hosts[0]!.url).not.toBe(victim.url);
    expect(hosts.find((h) => h.url === victim.url)!.downUntil).toBeGreaterThan(Date.now());
    // A search forcing the killed region fails: no other region answers in its name (D-384).
    const victimId = r.regionIds[r.nodes.indexOf(victim)]!;
    const forced = await sift
      .search({ query: "garden", indexName: r.index, serviceName: r.service, regionId: victimId })
      .catch((error: unknown) => error);
    expect(forced).toBeInstanceOf(SiftUnreachableError);
    expect((forced as SiftUnreachableError).causes.map((c) => c.region)).toEqual([victimId]);
  });
});
