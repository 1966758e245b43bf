// Erasure over HTTP (docs/versions.md, Erasure): POST .../records/{id}/purge removes a record from
// every retained version, older versions and branches included, erases its data from the engine's
// files, and shows up in the version list as a `purge` version naming the id, who and when.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { IndexVersion } from "@sift/sdk";
import { ok } from "../support/contract.ts";
import type { Http } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let s: Http;
let service: string;

beforeAll(async () => {
  world = await startWorld({ SIFT_COALESCE_AFTER: "1000", SIFT_RETAIN_VERSIONS: "1000" });
  s = world.a.session;
  service = world.a.service;
});
afterAll(() => world?.stop());

let n = 0;
async function freshIndex(visibility: "PUBLIC" | "PRIVATE" = "PRIVATE"): Promise<string> {
  const name = `erasure-${++n}`;
  ok(await s.post("/v1/indexes", { name, serviceName: service, visibility }), 201);
  return name;
}

const rec = (index: string, id: string) => `/v1/indexes/${index}/records/${encodeURIComponent(id)}`;
const put = async (index: string, id: string, body: object) => ok(await s.put(rec(index, id), body)).indexVersion;
const purge = (index: string, id: string, key?: string) =>
  s.post(`${rec(index, id)}/purge`, undefined, key ? { key, cookies: false } : {});
const search = async (index: string, query: string, version: string) =>
  ok(
    await s.get(
      `/v1/search?query=${encodeURIComponent(query)}&indexName=${index}&serviceName=${service}&scope=all&limit=100&version=${version}`,
    ),
  ).suggestions.map((r: { id: string }) => r.id) as string[];
const listVersions = async (index: string) =>
  ok(await s.get(`/v1/indexes/${index}/versions`)).versions as IndexVersion[];

/** Every file under the server's data directory that holds `text`. */
function filesHolding(text: string): string[] {
  const root = world.server.dataDir;
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((file) => readFileSync(file).includes(text));
}

describe("purge", () => {
  test("removes the record from every retained version: majors, changes and branches, with right counts", async () => {
    const index = await freshIndex();
    const marker = "Qzmarkerpurgeone";
    await put(index, "keep", { title: "Keeper" });
    await put(index, "gone", { title: "Secret Person", data: { note: marker } });
    // A checkpoint makes major 1 out of the chain 0.1, 0.2; then a change and a branch on top.
    const checkpoint = ok(await s.post(`/v1/indexes/${index}/coalesce`)).indexVersion;
    expect(checkpoint).toBe("1");
    await put(index, "gone", { title: "Secret Person Edited", data: { note: marker } });
    ok(await s.post(`/v1/indexes/${index}/versions/1/activate`));
    const branch = await put(index, "other", { title: "Other" });
    expect(branch).toBe("1.2");

    const before = await listVersions(index);
    const held = new Set<string>();
    for (const v of before)
      if ((await s.get(`${rec(index, "gone")}?version=${v.version}`)).status === 200) held.add(v.version);
    expect([...held].sort()).toEqual(["0.2", "1", "1.1", "1.2"]);
    expect(filesHolding(marker).length).toBeGreaterThan(0);

    const purged = ok(await purge(index, "gone"));
    expect(purged.resultCode).toBe("SUCCESS");

    const after = await listVersions(index);
    for (const v of before) {
      ok(await s.get(`${rec(index, "gone")}?version=${v.version}`), 404);
      expect(await search(index, "secret", v.version)).toEqual([]);
      expect(await search(index, marker, v.version)).toEqual([]);
      const now = after.find((a) => a.version === v.version)!;
      expect(now.records).toBe(v.records! - (held.has(v.version) ? 1 : 0));
    }
    // The rest is untouched.
    expect(await search(index, "keeper", "1.1")).toEqual(["keep"]);
    expect(await search(index, "other", "1.2")).toEqual(["other"]);
    // No file of the data directory holds the record's text any more.
    expect(filesHolding(marker)).toEqual([]);
    // The id stays gone in the new active version, and can be written again.
    ok(await s.get(rec(index, "gone")), 404);
    await put(index, "gone", { title: "Fresh" });
    expect(ok(await s.get(rec(index, "gone"))).title).toBe("Fresh");
  });

  test("is audited in the version list: a new active `purge` version with the id, who and when", async () => {
    const index = await freshIndex();
    await put(index, "p1", { title: "Private Matter", data: { note: "Qzmarkeraudit" } });
    const t0 = Date.now();
    const version = ok(await purge(index, "p1", world.a.keys.adm)).indexVersion;
    const listed = await listVersions(index);
    const entry = listed.find((v) => v.version === version)!;
    expect(entry).toMatchObject({ kind: "purge", state: "ready", active: true, records: 0 });
    expect(entry.purge).toEqual({ recordId: "p1", by: expect.stringMatching(/^key:/) });
    expect(entry.createdAt).toBeGreaterThanOrEqual(t0);
    expect(listed[0]!.version).toBe(version);
    // The content appears nowhere in the list.
    expect(JSON.stringify(listed)).not.toMatch(/Private Matter|Qzmarkeraudit/);
    // A session's purge names its user.
    await put(index, "p2", { title: "Other Matter" });
    const bySession = ok(await purge(index, "p2")).indexVersion;
    const second = (await listVersions(index)).find((v) => v.version === bySession)!;
    expect(second.purge).toEqual({ recordId: "p2", by: expect.stringMatching(/^user:/) });
  });

  test("a record deleted while the index was PRIVATE is unreadable through version= once PUBLIC", async () => {
    const index = await freshIndex("PRIVATE");
    const written = await put(index, "tax-id", { title: "Jane Roe", data: { ssn: "Qzmarkerssn" } });
    ok(await s.delete(rec(index, "tax-id")));
    ok(await s.patch(`/v1/indexes/${index}`, { visibility: "PUBLIC" }));
    const srh = world.a.keys.srh;
    // The finding: the deleted record is still there in the older version.
    expect(ok(await s.get(`${rec(index, "tax-id")}?version=${written}`, { key: srh, cookies: false })).title).toBe(
      "Jane Roe",
    );
    ok(await purge(index, "tax-id"));
    ok(await s.get(`${rec(index, "tax-id")}?version=${written}`, { key: srh, cookies: false }), 404);
    const anonymous = world.http.fresh();
    const found = ok(
      await anonymous.get(`/v1/search?query=jane&indexName=${index}&serviceName=${service}&version=${written}`),
    );
    expect(found.suggestions).toEqual([]);
    expect(filesHolding("Qzmarkerssn")).toEqual([]);
  });

  test("a record no retained version holds answers 404 and creates no version", async () => {
    const index = await freshIndex();
    await put(index, "a", { title: "Alpha" });
    const before = await listVersions(index);
    const reply = await purge(index, "never-written");
    expect(reply.status).toBe(404);
    expect(reply.headers.get("content-type")).toMatch(/problem\+json/);
    expect(await listVersions(index)).toEqual(before);
    // Purged once, a second purge finds nothing either.
    ok(await purge(index, "a"));
    expect((await purge(index, "a")).status).toBe(404);
  });

  test("needs write authority on the index: srh keys, anonymous callers and other tenants cannot purge", async () => {
    const index = await freshIndex("PUBLIC");
    await put(index, "r1", { title: "Amsterdam" });
    expect((await purge(index, "r1", world.a.keys.srh)).status).toBe(401);
    expect((await world.http.fresh().post(`${rec(index, "r1")}/purge`)).status).toBe(401);
    expect((await purge(index, "r1", world.b.keys.adm)).status).toBe(404);
    // Nothing was purged.
    expect(ok(await s.get(rec(index, "r1"))).title).toBe("Amsterdam");
    expect((await listVersions(index)).some((v) => v.kind === "purge")).toBe(false);
    // A secret service key of the owner may, as it may write records.
    ok(await purge(index, "r1", world.a.keys.svc));
    ok(await s.get(rec(index, "r1")), 404);
  });

  test("an upload holding the id, ingested after the purge, skips it", async () => {
    const index = await freshIndex();
    await put(index, "x", { title: "Xavier" });
    const start = ok(await s.post("/v1/uploads/start", { indexName: index }));
    const blob = ['{"id":"x","title":"Xavier From File"}', '{"id":"y","title":"Yvonne"}'].join("\n");
    const uploaded = await fetch(start.uploadUrl, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: blob,
    });
    expect(uploaded.status).toBe(200);
    ok(await purge(index, "x"));
    ok(await s.post("/v1/uploads/complete", { indexName: index, indexVersion: start.indexVersion }));
    let status: { state: string; recordsSuppressed: number } | undefined;
    for (let i = 0; i < 200; i++) {
      status = ok(await s.get(`/v1/uploads/${index}/${start.indexVersion}`));
      if (status!.state === "succeeded" || status!.state === "failed") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toMatchObject({ state: "succeeded", recordsSuppressed: 1 });
    ok(await s.get(`${rec(index, "x")}?version=${start.indexVersion}`), 404);
    expect(ok(await s.get(rec(index, "y"))).title).toBe("Yvonne");
    expect(filesHolding("Xavier")).toEqual([]);
  });
});
