// Records and versions over HTTP (docs/versions.md, docs/api.md Records): every write is a new
// active version visible at once; any retained version is searchable and activatable; deletes
// outlive branching; coalesce makes a checkpoint; retention drops the rest.
import { createClient } from "@sift/sdk";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ok } from "../support/contract.ts";
import type { Http } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let s: Http;
let index: string;
let service: string;

beforeAll(async () => {
  world = await startWorld({ SIFT_COALESCE_AFTER: "1000", SIFT_RETAIN_VERSIONS: "1000" });
  s = world.a.session;
  service = world.a.service;
  const created = await s.post("/v1/indexes", { name: "versions", serviceName: service, visibility: "PRIVATE" });
  expect(created.status).toBe(201);
  index = "versions";
});
afterAll(() => world?.stop());

const put = async (id: string, body: object) =>
  ok(await s.put(`/v1/indexes/${index}/records/${encodeURIComponent(id)}`, body)).indexVersion as string;
const del = async (id: string) =>
  ok(await s.delete(`/v1/indexes/${index}/records/${encodeURIComponent(id)}`)).indexVersion as string;
const ids = async (query: string, extra = "") =>
  ok(
    await s.get(
      `/v1/search?query=${encodeURIComponent(query)}&indexName=${index}&serviceName=${service}&limit=100${extra}`,
    ),
  ).suggestions.map((r: { id: string }) => r.id) as string[];
const active = async () => ok(await s.get(`/v1/indexes/${index}`)).activeVersion as string;

describe("record writes", () => {
  test("a new index is empty at version 0; each PUT makes <major>.<minor>, active and searchable at once", async () => {
    expect(await active()).toBe("0");
    expect(await ids("a")).toEqual([]);
    expect(await put("amsterdam", { title: "Amsterdam", weight: 900 })).toBe("0.1");
    expect(await ids("ams")).toEqual(["amsterdam"]);
    expect(await put("antwerp", { title: "Antwerp", weight: 500 })).toBe("0.2");
    expect(await active()).toBe("0.2");
    expect(await ids("a", "&weighted=true")).toEqual(["amsterdam", "antwerp"]);
  });

  test("minVersion: one process holds every acknowledged write; an id no write returns is refused", async () => {
    const version = await put("aarhus", { title: "Aarhus" });
    const [major, minor] = version.split(".").map(Number) as [number, number];
    // Newer than anything written: nothing can be missing here, the read is answered.
    for (const newer of [version, `${major}.${minor + 50}`, `${major + 3}`, "999999999.999999999"]) {
      const read = await s.get(`/v1/indexes/${index}/records/aarhus?minVersion=${newer}`);
      expect(read.status, read.text).toBe(200);
    }
    // The contract's pattern lets these through; they are not version ids, and the answer names the parameter.
    for (const malformed of ["0007", `${major}.0`]) {
      for (const path of [
        `/v1/indexes/${index}/records/aarhus?minVersion=${malformed}`,
        `/v1/search?query=a&indexName=${index}&serviceName=${service}&minVersion=${malformed}`,
      ]) {
        const read = await s.get(path);
        expect(read.status, `${path}: ${read.text}`).toBe(400);
        expect(read.body).toMatchObject({
          resultCode: "INVALID_ARGUMENT",
          detail: expect.stringContaining("minVersion"),
        });
      }
    }
  });

  test("PUT stores the record verbatim, the path id wins over a body id, and an update replaces it", async () => {
    const record = {
      id: "ignored",
      title: "Athens",
      weight: 650,
      images: ["https://img.example/athens.jpg", "https://img.example/acropolis.jpg"],
      latitude: "37.9838",
      longitude: "23.7275",
      data: { country: "GR", tags: ["ancient", "capital"], nested: { ok: true, n: 1.5 } },
    };
    await put("athens", record);
    const { id: _ignored, ...rest } = record;
    expect(ok(await s.get(`/v1/indexes/${index}/records/athens`))).toEqual({ id: "athens", ...rest });
    await put("athens", { title: "Athína" });
    expect(ok(await s.get(`/v1/indexes/${index}/records/athens`))).toEqual({ id: "athens", title: "Athína", data: {} });
    expect(await ids("athi")).toEqual(["athens"]);
  });

  test("DELETE makes a version without the record; reading it is 404; deleting it again is 404", async () => {
    const v = await del("antwerp");
    expect(v).toMatch(/^0\.\d+$/);
    expect(await ids("ant")).toEqual([]);
    ok(await s.get(`/v1/indexes/${index}/records/antwerp`), 404);
    ok(await s.delete(`/v1/indexes/${index}/records/antwerp`), 404);
    expect(await active()).toBe(v);
  });

  test("record ids may hold any characters", async () => {
    await put("a/b c?d#é", { title: "Odd id" });
    expect(ok(await s.get(`/v1/indexes/${index}/records/${encodeURIComponent("a/b c?d#é")}`)).id).toBe("a/b c?d#é");
  });

  test("concurrent writes to one index are serialised: every one gets its own version", async () => {
    const versions = await Promise.all(
      Array.from({ length: 12 }, (_, i) => put(`c${i}`, { title: `Concurrent ${i}` })),
    );
    expect(new Set(versions).size).toBe(12);
    expect(await ids("concurrent")).toHaveLength(12);
  });
});

describe("versions", () => {
  test("the list is newest first; any retained version can be searched and read", async () => {
    const listed = ok(await s.get(`/v1/indexes/${index}/versions`)).versions;
    expect(listed[0].version).toBe(await active());
    expect(listed[0].active).toBe(true);
    expect(listed.at(-1)).toMatchObject({ version: "0", kind: "bulk", parent: null, records: 0 });
    const v01 = listed.find((v: { version: string }) => v.version === "0.1");
    expect(v01).toMatchObject({ kind: "change", parent: "0", state: "ready", records: 1 });
    expect(await ids("a", "&weighted=true&version=0.2")).toEqual(["amsterdam", "antwerp"]);
    expect(ok(await s.get(`/v1/indexes/${index}/records/antwerp?version=0.2`)).title).toBe("Antwerp");
    ok(await s.get(`/v1/search?query=a&indexName=${index}&serviceName=${service}&version=9.9`), 404);
  });

  test("activating an older version changes what search and records read; writing then branches from it", async () => {
    const before = await active();
    ok(await s.post(`/v1/indexes/${index}/versions/0.2/activate`));
    expect(await active()).toBe("0.2");
    expect(await ids("a", "&weighted=true")).toEqual(["amsterdam", "antwerp"]);
    expect(ok(await s.get(`/v1/indexes/${index}/records/antwerp`)).title).toBe("Antwerp");

    const branched = await put("berlin", { title: "Berlin" });
    const minor = (v: string) => Number(v.split(".")[1]);
    expect(minor(branched)).toBeGreaterThan(minor(before));
    const row = ok(await s.get(`/v1/indexes/${index}/versions`)).versions.find(
      (v: { version: string }) => v.version === branched,
    );
    expect(row.parent).toBe("0.2");
    // The branch holds 0.2's records plus Berlin, and not what came after 0.2 on the other branch...
    expect(await ids("b")).toEqual(["berlin"]);
    expect(await ids("concurrent")).toEqual([]);
    // ...except that antwerp, deleted later on the other branch, stays deleted (docs/versions.md, Deletes outlive branches and uploads).
    expect(await ids("ant")).toEqual([]);
  });

  test("a PUT writes a deleted id again", async () => {
    await put("antwerp", { title: "Antwerpen" });
    expect(await ids("antw")).toEqual(["antwerp"]);
  });

  test("activating an unknown version is 404", async () => {
    ok(await s.post(`/v1/indexes/${index}/versions/7.7/activate`), 404);
  });

  test("coalesce makes a self-contained checkpoint with the next major, active, with the same content", async () => {
    const before = (await ids("a")).sort();
    const result = ok(await s.post(`/v1/indexes/${index}/coalesce`));
    expect(result).toEqual({ resultCode: "SUCCESS", message: "OK", indexVersion: "1" });
    expect(await active()).toBe("1");
    expect((await ids("a")).sort()).toEqual(before);
    const row = ok(await s.get(`/v1/indexes/${index}/versions`)).versions.find(
      (v: { version: string }) => v.version === "1",
    );
    expect(row).toMatchObject({ kind: "checkpoint", state: "ready", active: true });
    // Nothing accumulated since: coalescing again changes nothing.
    expect(ok(await s.post(`/v1/indexes/${index}/coalesce`)).indexVersion).toBe("1");
    expect(await put("cairo", { title: "Cairo" })).toBe("1.1");
  });
});

describe("automatic coalesce and retention", () => {
  let other: World;
  beforeAll(async () => {
    other = await startWorld({
      SIFT_COALESCE_AFTER: "3",
      SIFT_RETAIN_VERSIONS: "2",
      SIFT_RETENTION_EVERY_SECONDS: "1",
    });
  });
  afterAll(() => other?.stop());

  test("a long chain of changes is checkpointed automatically, and old versions are dropped", async () => {
    const t = other.a;
    for (const [i, city] of ["Lima", "Lisbon", "London", "Lyon"].entries()) {
      ok(await t.session.put(`/v1/indexes/${t.privateIndex}/records/l${i}`, { title: city }));
    }
    let versions: { version: string; kind: string; active: boolean }[] = [];
    for (let i = 0; i < 100; i++) {
      versions = ok(await t.session.get(`/v1/indexes/${t.privateIndex}/versions`)).versions;
      const checkpoint = versions.find((v) => v.kind === "checkpoint");
      if (checkpoint && versions.length <= 4) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(versions.some((v) => v.kind === "checkpoint")).toBe(true);
    // Retention keeps the 2 newest ready versions plus what the active one is built on.
    expect(versions.length).toBeLessThanOrEqual(4);
    expect(versions.find((v) => v.version === "0.1")).toBeUndefined();
    const search = await t.session.get(
      `/v1/search?query=l&indexName=${t.privateIndex}&serviceName=${t.service}&version=0.1`,
    );
    expect(search.status).toBe(404);
    const live = ok(await t.session.get(`/v1/search?query=l&indexName=${t.privateIndex}&serviceName=${t.service}`));
    expect(live.suggestions.map((r: { title: string }) => r.title).sort()).toEqual([
      "Lima",
      "Lisbon",
      "London",
      "Lyon",
    ]);
  });
});

describe("what a version changed", () => {
  const name = "changes";
  const path = (version: string, query = "") => `/v1/indexes/${name}/versions/${version}/changes${query}`;

  beforeAll(async () => {
    ok(await s.post("/v1/indexes", { name, serviceName: service, visibility: "PRIVATE" }), 201);
  });

  test("each record change names its record and how it changed it", async () => {
    const write = async (id: string, body?: object) =>
      ok(
        body
          ? await s.put(`/v1/indexes/${name}/records/${id}`, body)
          : await s.delete(`/v1/indexes/${name}/records/${id}`),
      ).indexVersion as string;
    const added = await write("oslo", { title: "Oslo" });
    await write("bergen", { title: "Bergen" });
    const updated = await write("oslo", { title: "Oslo, Norway" });
    const deleted = await write("bergen");
    expect(ok(await s.get(path(added)))).toEqual({
      version: added,
      kind: "change",
      base: "0",
      counts: { added: 1, updated: 0, deleted: 0, unchanged: 0 },
      changes: [{ id: "oslo", change: "added" }],
    });
    expect(ok(await s.get(path(updated)))).toMatchObject({
      counts: { added: 0, updated: 1, deleted: 0, unchanged: 1 },
      changes: [{ id: "oslo", change: "updated" }],
    });
    expect(ok(await s.get(path(deleted))).changes).toEqual([{ id: "bergen", change: "deleted" }]);
  });

  test("an upload, through the SDK: counts against the version before it and every changed id, paged", async () => {
    const sift = createClient({ baseUrl: world.server.url, apiKey: world.a.keys.svc });
    // `oslo` as the PUT left it: unchanged; nine new records.
    const csv = ["id,title", 'oslo,"Oslo, Norway"', ...Array.from({ length: 9 }, (_, i) => `c${i},City ${i}`)];
    const before = ok(await s.get(`/v1/indexes/${name}`)).activeVersion as string;
    const { indexVersion } = await sift.uploadFile(name, new TextEncoder().encode(csv.join("\n")));
    await sift.waitForIngest(name, indexVersion);
    const first = await sift.versions.changes(name, indexVersion, { limit: 4 });
    expect(first).toMatchObject({
      kind: "bulk",
      base: before,
      counts: { added: 9, updated: 0, deleted: 0, unchanged: 1 },
      next: "c3",
    });
    const ids = first.changes.map((c) => c.id);
    for (let page = first; page.next; ) {
      page = await sift.versions.changes(name, indexVersion, { limit: 4, after: page.next });
      ids.push(...page.changes.map((c) => c.id));
    }
    expect(ids).toEqual(Array.from({ length: 9 }, (_, i) => `c${i}`));
  });

  test("a checkpoint changes nothing; a purge names its record; mistakes are problems, never a 500", async () => {
    ok(await s.put(`/v1/indexes/${name}/records/tromso`, { title: "Tromsø" }));
    const checkpoint = ok(await s.post(`/v1/indexes/${name}/coalesce`)).indexVersion as string;
    expect(ok(await s.get(path(checkpoint)))).toMatchObject({
      kind: "checkpoint",
      counts: { added: 0, updated: 0, deleted: 0, unchanged: 11 },
      changes: [],
    });
    const purged = ok(await s.post(`/v1/indexes/${name}/records/c0/purge`)).indexVersion as string;
    expect(ok(await s.get(path(purged)))).toMatchObject({
      kind: "purge",
      changes: [{ id: "c0", change: "purged" }],
      purge: { recordId: "c0" },
    });

    const missing = await s.get(path("999"));
    expect(ok(missing, 404).resultCode).toBe("NOT_FOUND");
    expect(missing.headers.get("content-type")).toContain("application/problem+json");
    expect(ok(await s.get(path(checkpoint, "?limit=0")), 400).errors[0].field).toBe("limit");
    expect(ok(await s.get(path(checkpoint, "?limit=5000")), 400).resultCode).toBe("INVALID_ARGUMENT");
    expect((await s.get(path("not-a-version"))).status).toBe(400);
    const pending = ok(await s.post("/v1/uploads/start", { indexName: name })).indexVersion as string;
    expect(ok(await s.get(path(pending)), 409).detail).toContain("pending");
  });
});
