import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, assert, describe, expect, test } from "vitest";
import { createClient, type SiftApiError, SiftError, SiftIngestFailedError, type SiftClient } from "@sift/sdk";
import { createFsBlobStore } from "../../server/src/blobs/fs-blobs.ts";
import { problemFor } from "../../server/src/http/problem.ts";
import { UploadService } from "../../server/src/services/uploads.ts";
import { ok } from "../support/contract.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let sift: SiftClient;
let service: string;

beforeAll(async () => {
  world = await startWorld({
    SIFT_MAX_UPLOAD_BYTES: String(4 * 1024 * 1024),
    // The suite leaves many upload URLs unused (expiry, tampering, interrupted PUTs); the quota
    // on uploads in progress has tests of its own (quotas.test.ts).
    SIFT_QUOTA_CONCURRENT_UPLOADS: "100",
  });
  service = world.a.service;
  // Through the contract-validating proxy, as an integrator would run it against a mock.
  sift = createClient({ baseUrl: world.prism.url, apiKey: world.a.keys.adm });
});
afterAll(() => world?.stop());

let n = 0;
async function freshIndex(): Promise<string> {
  const name = `ingest-${++n}`;
  await sift.indexes.create({ name, serviceName: service, visibility: "PRIVATE" });
  return name;
}
const titles = async (indexName: string, query: string) =>
  (await sift.search({ query, indexName, serviceName: service, limit: 100 })).suggestions.map((s) => s.title).sort();

const CSV = [
  "\uFEFFid,title,weight,images,latitude,longitude,country,population,capital",
  "par,Paris,2138551,https://img.example/paris.jpg|https://img.example/louvre.jpg,48.85341,2.3488,FR,2138551,true",
  'lyo,"Lyon, France",516092,,45.74846,4.84671,FR,516092,false',
  '"zur","Zürich ""Zurich""",341730,"[""https://img.example/zurich.jpg""]",47.36667,8.55,CH,341730,false',
  'ber,"Berlin',
  'Germany",3426354,,52.52437,13.41053,DE,3426354,true',
  "",
].join("\r\n");

describe("formats, detected by content", () => {
  test("CSV with a BOM, CRLF, quoted commas, quotes and newlines, images as a list or JSON, typed data", async () => {
    const index = await freshIndex();
    const { indexVersion } = await sift.uploadFile(index, new TextEncoder().encode(CSV));
    expect(indexVersion).toBe("1");
    const status = await sift.waitForIngest(index, indexVersion);
    expect(status).toMatchObject({
      state: "succeeded",
      format: "csv",
      gzip: false,
      recordsIngested: 4,
      recordsInvalid: 0,
      activate: true,
    });
    expect(status.durationMs).toBeGreaterThanOrEqual(0);
    expect(await titles(index, "zur")).toEqual(['Zürich "Zurich"']);
    const paris = await sift.records.get(index, "par");
    expect(paris).toEqual({
      id: "par",
      title: "Paris",
      weight: 2138551,
      images: ["https://img.example/paris.jpg", "https://img.example/louvre.jpg"],
      latitude: "48.85341",
      longitude: "2.3488",
      data: { country: "FR", population: 2138551, capital: true },
    });
    expect((await sift.records.get(index, "ber")).title).toBe("Berlin\r\nGermany");
    expect((await sift.records.get(index, "zur")).images).toEqual(["https://img.example/zurich.jpg"]);
    expect((await sift.indexes.get(index)).activeVersion).toBe("1");
  });

  test("JSON Lines and a JSON array, plain and gzip; a missing id gets a UUID", async () => {
    const index = await freshIndex();
    const lines = [
      '{"id":"a1","title":"Alpha"}',
      "",
      '{"title":"Beta","data":{"n":1}}',
      '{"id":"a3","title":"Gamma","weight":3}',
    ].join("\n");
    const array = JSON.stringify([{ id: "b1", title: "Delta" }, { title: "Épsilon" }]);
    const cases: [Uint8Array, string, boolean][] = [
      [new TextEncoder().encode(lines), "jsonl", false],
      [gzipSync(lines), "jsonl", true],
      [new TextEncoder().encode(array), "json", false],
      [gzipSync(array), "json", true],
    ];
    for (const [bytes, format, gzip] of cases) {
      const { indexVersion } = await sift.uploadFile(index, bytes);
      const status = await sift.waitForIngest(index, indexVersion);
      expect(status).toMatchObject({ format, gzip, state: "succeeded" });
    }
    // The last upload is active: only the array's records remain.
    expect(await titles(index, "e")).toEqual(["Épsilon"]);
    const generated = (await sift.search({ query: "epsilon", indexName: index, serviceName: service })).suggestions[0]!
      .id;
    expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe("bad files", () => {
  test("a malformed line fails the whole file with its line number; the active version does not change", async () => {
    const index = await freshIndex();
    await sift.waitForIngest(
      index,
      (await sift.uploadFile(index, new TextEncoder().encode('{"id":"ok","title":"Kept"}'))).indexVersion,
    );
    const bad = [
      '{"id":"1","title":"One"}',
      '{"id":"2","title":"Two",}',
      '{"id":"3","weight":"heavy","title":"Three"}',
      '{"id":"4"}',
    ].join("\n");
    const { indexVersion } = await sift.uploadFile(index, new TextEncoder().encode(bad));
    const error = await sift.waitForIngest(index, indexVersion).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SiftIngestFailedError);
    const status = (error as SiftIngestFailedError).status;
    expect(status).toMatchObject({ state: "failed", recordsIngested: 0, recordsInvalid: 3, errorCount: 3 });
    expect(status.failureReason).toMatch(/3 record\(s\) are invalid.*skipInvalid/);
    expect(status.errors.map((e) => [e.line, e.field])).toEqual([
      [2, undefined],
      [3, "weight"],
      [4, "title"],
    ]);
    expect((await sift.indexes.get(index)).activeVersion).toBe("1");
    expect(await titles(index, "k")).toEqual(["Kept"]);
    const versions = (await sift.versions.list(index)).versions;
    expect(versions.find((v) => v.version === indexVersion)).toMatchObject({ state: "failed", active: false });
  });

  test("skipInvalid ingests the valid records and reports the rest", async () => {
    const index = await freshIndex();
    const bad = ['{"id":"1","title":"One"}', "not json", '{"id":"3","title":"Three"}'].join("\n");
    const { indexVersion } = await sift.uploadFile(index, new TextEncoder().encode(bad), { skipInvalid: true });
    const status = await sift.waitForIngest(index, indexVersion);
    expect(status).toMatchObject({ state: "succeeded", recordsIngested: 2, recordsInvalid: 1 });
    expect(status.errors).toEqual([{ line: 2, message: expect.stringMatching(/JSON/) }]);
  });

  test("a JSON array cut short fails with the line where it broke", async () => {
    const index = await freshIndex();
    const { indexVersion } = await sift.uploadFile(
      index,
      new TextEncoder().encode('[\n{"id":"1","title":"One"},\n{"id":"2","title":'),
    );
    const failure = await sift.waitForIngest(index, indexVersion).catch((e: unknown) => e);
    assert.instanceOf(failure, SiftIngestFailedError);
    const { status } = failure;
    expect(status.state).toBe("failed");
    expect(status.failureReason).toMatch(/line 3/);
  });

  test("activate: false leaves the version ready but not active", async () => {
    const index = await freshIndex();
    const { indexVersion } = await sift.uploadFile(index, new TextEncoder().encode('{"id":"x","title":"Xylophone"}'), {
      activate: false,
    });
    await sift.waitForIngest(index, indexVersion);
    expect((await sift.indexes.get(index)).activeVersion).toBe("0");
    expect(await titles(index, "xy")).toEqual([]);
    await sift.versions.activate(index, indexVersion);
    expect(await titles(index, "xy")).toEqual(["Xylophone"]);
  });
});

describe("the upload URL", () => {
  test("is signed: a tampered signature, version or expiry is 403, and nothing is stored", async () => {
    const index = await freshIndex();
    const { uploadUrl, indexVersion } = await sift.uploads.start(index);
    const url = new URL(uploadUrl);
    const tamper = async (edit: (u: URL) => void) => {
      const u = new URL(url);
      edit(u);
      return fetch(u, { method: "PUT", body: "id,title\n1,x\n" });
    };
    const signature = url.searchParams.get("signature")!;
    // One character changed, whatever the signature starts with (it is random base64url).
    const forged = (signature[0] === "A" ? "B" : "A") + signature.slice(1);
    expect((await tamper((u) => u.searchParams.set("signature", forged))).status).toBe(403);
    expect(
      (await tamper((u) => u.searchParams.set("expires", String(Number(url.searchParams.get("expires")) + 60_000))))
        .status,
    ).toBe(403);
    // Its last character changed, whatever it is (an id ending in "x" once made this the real URL).
    const [, , , uploadId] = url.pathname.split("/");
    const other = `${uploadId!.slice(0, -1)}${uploadId!.endsWith("x") ? "y" : "x"}`;
    expect((await tamper((u) => (u.pathname = `/v1/blobs/${other}`))).status).toBe(403);
    expect((await sift.uploads.status(index, indexVersion)).state).toBe("awaiting_upload");
  });

  test("is valid 15 minutes and usable once; complete before the PUT is 409", async () => {
    const index = await freshIndex();
    const { uploadUrl, indexVersion } = await sift.uploads.start(index);
    const expires = Number(new URL(uploadUrl).searchParams.get("expires"));
    expect(expires - Date.now()).toBeGreaterThan(14 * 60_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const early = await world.a.session.post("/v1/uploads/complete", { indexName: index, indexVersion });
    expect(ok(early, 409).detail).toMatch(/PUT the bytes/);
    expect((await fetch(uploadUrl, { method: "PUT", body: "id,title\n1,x\n" })).status).toBe(200);
    const again = await fetch(uploadUrl, { method: "PUT", body: "id,title\n1,y\n" });
    expect(again.status).toBe(409);
    expect(again.headers.get("content-type")).toBe("application/problem+json");
  });

  test("is refused with 403 once expired (15 minutes)", async () => {
    const index = await freshIndex();
    const { sift: running } = world.server;
    let clock = Date.now();
    const secret = Buffer.from("expiry-test-secret");
    const uploads = new UploadService({
      db: running.store.db,
      catalog: running.catalog,
      versions: running.versions,
      blobs: createFsBlobStore(join(world.server.dataDir, "expiry-blobs")),
      secret,
      maxUploadBytes: 1024,
      onQueued: () => {},
      now: () => clock,
    });
    const principal = await running.apiKeys.authenticate(world.a.keys.adm);
    const { uploadUrl } = await uploads.start(principal, index, "http://sift.test");
    const url = new URL(uploadUrl);
    const receive = () =>
      uploads.receive(
        url.pathname.split("/").pop()!,
        Number(url.searchParams.get("expires")),
        url.searchParams.get("signature")!,
        4,
        (async function* () {
          yield new TextEncoder().encode("a,b\n");
        })(),
      );
    clock += 15 * 60_000 + 1;
    // The service throws a domain error; the status is what the API maps it to.
    const answered = () => receive().catch((error: unknown) => Promise.reject(problemFor(error) ?? error));
    await expect(answered()).rejects.toMatchObject({ status: 403, message: expect.stringMatching(/expired/) });
    clock -= 2;
    await expect(receive()).resolves.toEqual({ bytes: 4 });
  });

  test("refuses a file over the size limit with 413, before and while reading it", async () => {
    const index = await freshIndex();
    const big = new Uint8Array(5 * 1024 * 1024).fill(0x61);
    const declared = await sift.uploads.start(index);
    expect((await fetch(declared.uploadUrl, { method: "PUT", body: big })).status).toBe(413);
    // Without a length up front, the limit is enforced as the bytes stream in.
    const streamed = await sift.uploads.start(index);
    const error = await sift
      .uploadFile(
        index,
        (async function* () {
          for (let i = 0; i < 5; i++) yield big.subarray(0, 1024 * 1024);
        })(),
      )
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SiftError);
    expect((error as SiftApiError).status).toBe(413);
    expect((await sift.uploads.status(index, streamed.indexVersion)).state).toBe("awaiting_upload");
  });

  test("an interrupted PUT leaves nothing usable; the URL can then carry the whole file", async () => {
    const index = await freshIndex();
    const { uploadUrl, indexVersion } = await sift.uploads.start(index);
    const controller = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        c.enqueue(new TextEncoder().encode('{"id":"1","title":"Partial"}\n'));
        await new Promise((r) => setTimeout(r, 50));
        controller.abort();
      },
    });
    // Aborting is the point, so the PUT must end in the abort; any other outcome is a real failure.
    const put = fetch(uploadUrl, { method: "PUT", body, signal: controller.signal, duplex: "half" } as RequestInit);
    expect(
      await put.then(
        () => "answered",
        (error: Error) => error.name,
      ),
    ).toBe("AbortError");
    await new Promise((r) => setTimeout(r, 200));
    expect((await sift.uploads.status(index, indexVersion)).state).toBe("awaiting_upload");
    expect((await fetch(uploadUrl, { method: "PUT", body: '{"id":"1","title":"Whole"}\n' })).status).toBe(200);
    await sift.uploads.complete({ indexName: index, indexVersion });
    await sift.waitForIngest(index, indexVersion);
    expect(await titles(index, "w")).toEqual(["Whole"]);
  });
});

describe("versions and tombstones", () => {
  test("concurrent starts get sequential version ids", async () => {
    const index = await freshIndex();
    const started = await Promise.all(Array.from({ length: 8 }, () => sift.uploads.start(index)));
    expect(started.map((s) => Number(s.indexVersion)).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  test("an unknown index is a 400 naming indexName", async () => {
    const reply = await world.a.session.post("/v1/uploads/start", { indexName: "nope" });
    expect(ok(reply, 400).errors).toEqual([{ field: "indexName", message: "no such index" }]);
  });

  test("a deleted id stays deleted through later uploads until a PUT writes it again", async () => {
    const index = await freshIndex();
    await sift.waitForIngest(
      index,
      (await sift.uploadFile(index, new TextEncoder().encode("id,title\nk1,Kiwi\nk2,Kale\n"))).indexVersion,
    );
    await sift.records.delete(index, "k1");
    const { indexVersion } = await sift.uploadFile(
      index,
      new TextEncoder().encode("id,title\nk1,Kiwi again\nk2,Kale\nk3,Kelp\n"),
    );
    const status = await sift.waitForIngest(index, indexVersion);
    expect(status).toMatchObject({ recordsIngested: 2, recordsSuppressed: 1 });
    expect(await titles(index, "k")).toEqual(["Kale", "Kelp"]);
    await sift.records.put(index, "k1", { title: "Kiwi returns" });
    const after = await sift.uploadFile(index, new TextEncoder().encode("id,title\nk1,Kiwi fourth\n"));
    expect((await sift.waitForIngest(index, after.indexVersion)).recordsSuppressed).toBe(0);
    expect(await titles(index, "k")).toEqual(["Kiwi fourth"]);
  });

  test("a delete made while an upload is ingesting still holds once it goes live", async () => {
    const index = await freshIndex();
    await sift.records.put(index, "late", { title: "Late" });
    const rows = Array.from({ length: 20_000 }, (_, i) => `{"id":"r${i}","title":"Row ${i}"}`);
    rows.push('{"id":"late","title":"Late"}');
    const { uploadUrl, indexVersion } = await sift.uploads.start(index);
    await fetch(uploadUrl, { method: "PUT", body: rows.join("\n") });
    await sift.records.delete(index, "late");
    await sift.uploads.complete({ indexName: index, indexVersion });
    await sift.waitForIngest(index, indexVersion);
    expect(await titles(index, "late")).toEqual([]);
  });
});
