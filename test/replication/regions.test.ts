// Regions for real (docs/replication.md): three Sift processes with their own data directories,
// one shared PostgreSQL, a private three-server NATS JetStream cluster. A write in one region is
// searchable in the others; a region that was down catches up; concurrent writers end with one
// order everywhere.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { regionsAvailable, type Regions, startRegions } from "../support/regions.ts";

const search = (r: Regions, node: number, query: string, extra = "") =>
  r
    .http(node)
    .get(`/v1/search?query=${encodeURIComponent(query)}&indexName=${r.index}&serviceName=${r.service}${extra}`);

describe.skipIf(!regionsAvailable)("three regions on one change log", () => {
  let r: Regions;
  beforeAll(async () => {
    r = await startRegions();
  }, 180_000);
  afterAll(async () => {
    await r?.stop();
  });

  it("a write acknowledged in one region is searchable in every region", async () => {
    const put = await r.http(0).put(`/v1/indexes/${r.index}/records/hose-1`, { title: "Garden hose", weight: 4 });
    expect(put.status).toBe(200);
    const version = put.body.indexVersion as string;
    // The region that acknowledged it serves it at once.
    expect((await search(r, 0, "garden")).body.suggestions.map((s: { id: string }) => s.id)).toEqual(["hose-1"]);
    for (const node of [1, 2]) {
      // Read your writes: minVersion makes the region wait for the version (or answer 503).
      const found = await search(r, node, "garden", `&minVersion=${version}`);
      expect(found.status, found.text).toBe(200);
      expect(found.body.indexVersion).toBe(version);
      expect(found.body.suggestions.map((s: { id: string }) => s.id)).toEqual(["hose-1"]);
    }
  });
});
