// Regions for real (docs/replication.md): three Sift processes with their own data directories,
// one shared PostgreSQL, a private three-server NATS JetStream cluster. A write in one region is
// searchable in the others; a region that was down catches up; concurrent writers end with one
// order everywhere.
import { describe, expect, it } from "vitest";
import { regionsAvailable, type Regions, useRegions } from "../support/regions.ts";

const search = (r: Regions, node: number, query: string, extra = "") =>
  r
    .http(node)
    .get(`/v1/search?query=${encodeURIComponent(query)}&indexName=${r.index}&serviceName=${r.service}${extra}`);

const ids = (reply: { body: { suggestions: { id: string }[] } }) => reply.body.suggestions.map((s) => s.id).sort();

/** What a region holds of the index: its version list (id, parent, count) and the active version. */
async function versionsIn(r: Regions, node: number) {
  const reply = await r.http(node).get(`/v1/indexes/${r.index}/versions`);
  expect(reply.status, reply.text).toBe(200);
  return reply.body.versions.map((v: { version: string; parent: string | null }) => `${v.version}<${v.parent}`).sort();
}

describe.skipIf(!regionsAvailable)("three regions on one change log", () => {
  const regions = useRegions();

  it("a write acknowledged in one region is searchable in every region", async () => {
    const r = regions();
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
    // With the key, /v1/regions says per index what each region serves and how far it trails.
    const listed = await r.http(0).get("/v1/regions");
    expect(listed.status, listed.text).toBe(200);
    for (const id of r.regionIds) {
      const region = listed.body.regions.find((g: { id: string }) => g.id === id);
      expect(region.indexes, id).toContainEqual({
        indexName: r.index,
        activeVersion: version,
        behindVersions: 0,
        lagMs: 0,
      });
    }
    // Without one the list stays public and names no index.
    const anonymous = await fetch(`${r.nodes[0]!.url}/v1/regions`).then((reply) => reply.json());
    expect(anonymous.regions.filter((g: { indexes?: unknown }) => g.indexes !== undefined)).toEqual([]);
    // Every node says it follows the log and has caught up.
    for (const node of r.nodes) {
      const ready = await fetch(`${node.url}/readyz`).then((reply) => reply.json());
      expect(ready).toMatchObject({
        status: "ok",
        checks: { replication: true },
        replication: { caughtUp: true, behind: 0 },
      });
    }
  });

  it("a minVersion no write returned is answered or refused at once in every region", async () => {
    const r = regions();
    const put = await r.http(0).put(`/v1/indexes/${r.index}/records/barrel`, { title: "Rain barrel" });
    expect(put.status, put.text).toBe(200);
    const [major, minor] = (put.body.indexVersion as string).split(".").map(Number) as [number, number];
    for (const node of [0, 1, 2]) {
      // Newer than any acknowledged write: a region that holds all the log holds has every one,
      // and answers as one process would (it used to wait 2 s and answer 503, in every region).
      for (const newer of [`${major}.${minor + 1000}`, `${major + 7}`]) {
        const read = await r.http(node).get(`/v1/indexes/${r.index}/records/barrel?minVersion=${newer}`);
        expect(read.status, read.text).toBe(200);
        expect(read.body.title).toBe("Rain barrel");
      }
      // Not a version id at all, though the contract's pattern lets it through (it was a 500).
      const malformed = await r.http(node).get(`/v1/indexes/${r.index}/records/barrel?minVersion=0${major}`);
      expect(malformed.status, malformed.text).toBe(400);
      expect(malformed.body.detail).toContain("minVersion");
    }
  });

  it("every region stays ready while writes stream in: a node an entry behind for a moment is following", async () => {
    const r = regions();
    const seen: { status: number; behind: number }[] = [];
    let writing = true;
    const watch = (async () => {
      while (writing) {
        for (const node of r.nodes.slice(1)) {
          const reply = await fetch(`${node.url}/readyz`);
          seen.push({ status: reply.status, behind: (await reply.json()).replication?.behind ?? -1 });
        }
      }
    })();
    for (let i = 0; i < 80; i++) {
      const put = await r.http(i % 3).put(`/v1/indexes/${r.index}/records/stream-${i % 10}`, { title: `Stream ${i}` });
      expect(put.status, put.text).toBe(200);
    }
    writing = false;
    await watch;
    expect(seen.length).toBeGreaterThan(20);
    // A /readyz that failed whenever an entry was on its way would take the node out of a load
    // balancer's rotation again and again under writes.
    expect(seen.filter((s) => s.status !== 200)).toEqual([]);
  });

  it("two regions writing the same record at once end with one order everywhere", async () => {
    const r = regions();
    const writes = Array.from({ length: 24 }, (_, i) =>
      r.http(i % 2).put(`/v1/indexes/${r.index}/records/contested`, { title: `Contested ${i}`, weight: i + 1 }),
    );
    const replies = await Promise.all(writes);
    for (const reply of replies)
      expect(reply.status, `${reply.text}\n${r.nodes.map((n) => n.output()).join("\n")}`).toBe(200);
    const acknowledged = replies.map((reply) => reply.body.indexVersion as string);
    // Every write got its own version: the compare-and-set never let two writers take one id.
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    const newest = acknowledged.sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1])).at(-1)!;
    const seen = [];
    for (const node of [0, 1, 2]) {
      const record = await r.http(node).get(`/v1/indexes/${r.index}/records/contested?minVersion=${newest}`);
      expect(record.status, record.text).toBe(200);
      seen.push(record.body.title);
    }
    // The same last writer everywhere, and it is the write of the newest version.
    expect(new Set(seen).size).toBe(1);
    const last = await r.http(0).get(`/v1/indexes/${r.index}/records/contested?version=${newest}`);
    expect(last.body.title).toBe(seen[0]);
    const lists = await Promise.all([0, 1, 2].map((n) => versionsIn(r, n)));
    expect(lists[1]).toEqual(lists[0]);
    expect(lists[2]).toEqual(lists[0]);
  });

  it("a region killed with SIGKILL catches up on writes and a bulk version made while it was down", async () => {
    const r = regions();
    const down = r.nodes[2]!;
    await down.kill("SIGKILL");
    // The regions list tells which region answers.
    const regionsNow = async () =>
      Object.fromEntries(
        (await r.http(0).get("/v1/regions")).body.regions
          .filter((g: { id: string }) => ["frankfurt", "london", "newark"].includes(g.id))
          .map((g: { id: string; status: string }) => [g.id, g.status]),
      );
    await expect.poll(regionsNow, { timeout: 10_000 }).toEqual({ frankfurt: "up", london: "up", newark: "down" });
    const put = await r.http(0).put(`/v1/indexes/${r.index}/records/late-1`, { title: "Lantern while away" });
    expect(put.status, put.text).toBe(200);

    // A bulk upload in region 0: built once there, published, opened by the others.
    const started = await r.http(0).post("/v1/uploads/start", { indexName: r.index });
    expect(started.status, started.text).toBe(200);
    const csv = ["id,title,weight", ...Array.from({ length: 500 }, (_, i) => `bulk-${i},Bulk lamp ${i},${i + 1}`)].join(
      "\n",
    );
    expect((await fetch(started.body.uploadUrl, { method: "PUT", body: csv })).status).toBe(200);
    const { indexVersion } = started.body as { indexVersion: string };
    expect((await r.http(0).post("/v1/uploads/complete", { indexName: r.index, indexVersion })).status).toBe(200);
    await expect
      .poll(async () => (await r.http(0).get(`/v1/uploads/${r.index}/${indexVersion}`)).body.state, { timeout: 30_000 })
      .toMatch(/succeeded|failed/);
    const ingested = await r.http(0).get(`/v1/uploads/${r.index}/${indexVersion}`);
    expect(ingested.body.state, `${ingested.text}\n${r.nodes[0]!.output()}`).toBe("succeeded");
    // Region 1 opens the published segment; it never saw the file.
    const inOne = await search(r, 1, "bulk lamp 49", `&minVersion=${indexVersion}&limit=100`);
    expect(inOne.status, inOne.text).toBe(200);
    expect(ids(inOne)).toContain("bulk-49");

    await down.start();
    const back = await search(r, 2, "bulk lamp", `&minVersion=${indexVersion}&limit=100`);
    expect(back.status, back.text).toBe(200);
    expect(back.body.totalHits).toBe(500);
    // An upload replaces the index's records: the record written while it was down went with it,
    // in every region alike.
    for (const node of [0, 1, 2]) {
      expect((await r.http(node).get(`/v1/indexes/${r.index}/records/late-1`)).status).toBe(404);
    }
    const lists = await Promise.all([0, 1, 2].map((n) => versionsIn(r, n)));
    expect(lists[2]).toEqual(lists[0]);
    await expect.poll(regionsNow, { timeout: 10_000 }).toEqual({ frankfurt: "up", london: "up", newark: "up" });
    const newark = (await r.http(0).get("/v1/regions")).body.regions.find((g: { id: string }) => g.id === "newark");
    expect(newark.replication).toMatchObject({ caughtUp: true, behind: 0 });
  });
});
