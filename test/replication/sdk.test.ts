// The SDK across three real regions (issue 18): a client with regions: "discover" reads its own
// writes in a region other than the one that took them, and keeps searching with zero failures
// while the region it prefers is killed with SIGKILL.
import { createClient, type SearchResponse, SiftUnreachableError } from "@sift/sdk";
import { describe, expect, it } from "vitest";
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
