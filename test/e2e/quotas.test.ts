// Tenant quotas (issue 15; docs/api.md, Limits): records per index, retained versions, upload
// bytes and concurrent uploads, each set small here. Past a quota the answer is a problem with
// resultCode QUOTA_EXCEEDED naming it: 403 when only deleting helps, 429 when it frees itself.
// Through the contract-validating proxy, so each answer must also be one the contract lists.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, SiftError, SiftIngestFailedError, type SiftClient } from "@sift/sdk";
import { ok } from "../support/contract.ts";
import type { Reply } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

const lines = (count: number, from = 0) =>
  new TextEncoder().encode(
    Array.from({ length: count }, (_, i) => `{"id":"u${from + i}","title":"Record ${from + i}"}\n`).join(""),
  );

function quotaProblem(reply: Reply, status: number) {
  ok(reply, status);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
  expect(reply.body.resultCode).toBe("QUOTA_EXCEEDED");
  return reply.body as { detail: string; errors: { field: string; message: string }[] };
}

async function failureOf(client: SiftClient, index: string, bytes: Uint8Array): Promise<string> {
  const { indexVersion } = await client.uploadFile(index, bytes);
  return client.waitForIngest(index, indexVersion).then(
    () => "succeeded",
    (error: unknown) => (error instanceof SiftIngestFailedError ? String(error.status.failureReason) : String(error)),
  );
}

describe("records per index and retained versions", () => {
  let world: World;
  let sift: SiftClient;
  beforeAll(async () => {
    world = await startWorld({
      SIFT_QUOTA_RECORDS_PER_INDEX: "2",
      SIFT_RETAIN_VERSIONS: "2",
      // Only the retention that follows a new version can act during this test.
      SIFT_RETENTION_EVERY_SECONDS: "86400",
    });
    sift = createClient({ baseUrl: world.prism.url, apiKey: world.a.keys.adm });
  });
  afterAll(() => world?.stop());

  test("a record PUT past the quota is 403 naming quota.recordsPerIndex; replacing and deleting still work", async () => {
    const s = world.a.session;
    const index = world.a.privateIndex; // holds r1
    const put = (id: string, title: string) => s.put(`/v1/indexes/${index}/records/${id}`, { title });
    ok(await put("r2", "Second"), 200);
    const refused = quotaProblem(await put("r3", "Third"), 403);
    expect(refused.errors).toEqual([{ field: "quota.recordsPerIndex", message: "at most 2" }]);
    expect((await sift.indexes.get(index)).records).toBe(2);
    // A record already there may be replaced at the quota; a delete makes room.
    ok(await put("r1", "First, again"), 200);
    ok(await s.delete(`/v1/indexes/${index}/records/r2`), 200);
    ok(await put("r3", "Third"), 200);
    expect((await sift.indexes.get(index)).records).toBe(2);
  });

  test("an upload of more records than the quota fails saying so; one within it succeeds", async () => {
    const index = world.a.publicIndex;
    expect(await failureOf(sift, index, lines(3))).toMatch(
      /more than 2 records, the quota of records per index \(quota\.recordsPerIndex/,
    );
    expect(await failureOf(sift, index, lines(2))).toBe("succeeded");
    expect((await sift.indexes.get(index)).records).toBe(2);
  });

  test("retention keeps at most the quota of versions as soon as an upload adds one", async () => {
    await sift.indexes.create({ name: "retained", serviceName: world.a.service, visibility: "PRIVATE" });
    for (let i = 0; i < 4; i++) expect(await failureOf(sift, "retained", lines(1, i))).toBe("succeeded");
    const listed = ok(await world.a.session.get("/v1/indexes/retained/versions"));
    // Uploads made 1 to 4 over the empty 0; the two newest are kept, 4 being the active one.
    expect(listed.versions.map((v: { version: string }) => v.version)).toEqual(["4", "3"]);
    const old = await world.a.session.get("/v1/indexes/retained/records/u0?version=1");
    ok(old, 404);
  });
});

describe("concurrent uploads", () => {
  let world: World;
  let a: SiftClient;
  beforeAll(async () => {
    world = await startWorld({ SIFT_QUOTA_CONCURRENT_UPLOADS: "2" });
    a = createClient({ baseUrl: world.prism.url, apiKey: world.a.keys.adm });
  });
  afterAll(() => world?.stop());

  test("a start past the concurrent uploads is 429 with Retry-After, until an upload finishes", async () => {
    const s = world.a.session;
    const index = world.a.privateIndex;
    const start = () => s.post("/v1/uploads/start", { indexName: index });
    const first = ok(await start());
    ok(await start());
    const refused = await start();
    expect(quotaProblem(refused, 429).errors).toEqual([{ field: "quota.concurrentUploads", message: "at most 2" }]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    // The other tenant has slots of its own.
    ok(await world.b.session.post("/v1/uploads/start", { indexName: world.b.privateIndex }));
    // Once the first upload's ingest ends, its slot is free again.
    expect((await fetch(first.uploadUrl, { method: "PUT", body: lines(1) })).status).toBe(200);
    await a.uploads.complete({ indexName: index, indexVersion: first.indexVersion });
    await a.waitForIngest(index, first.indexVersion);
    ok(await start());
    quotaProblem(await start(), 429);
  });
});

describe("upload bytes", () => {
  let world: World;
  let b: SiftClient;
  beforeAll(async () => {
    world = await startWorld({ SIFT_QUOTA_UPLOAD_BYTES: "1000" });
    b = createClient({ baseUrl: world.prism.url, apiKey: world.b.keys.adm });
  });
  afterAll(() => world?.stop());

  test("upload bytes not yet ingested are bounded: 403 quota.uploadBytes by length, while streaming, at start", async () => {
    const index = world.b.publicIndex;
    const put = async (body: BodyInit, streamed = false) => {
      const { uploadUrl, indexVersion } = await b.uploads.start(index);
      const init = { method: "PUT", body, ...(streamed ? { duplex: "half" } : {}) } as RequestInit;
      return { indexVersion, reply: await fetch(uploadUrl, init) };
    };
    const asProblem = async (response: Response) => {
      expect(response.status).toBe(403);
      const body = (await response.json()) as { resultCode: string; errors: unknown };
      expect(body.resultCode).toBe("QUOTA_EXCEEDED");
      expect(body.errors).toEqual([{ field: "quota.uploadBytes", message: "at most 1000" }]);
    };
    const file = lines(20); // about 650 bytes
    expect(file.byteLength).toBeGreaterThan(500);
    expect(file.byteLength).toBeLessThan(1000);

    // One file within the quota is stored; a second would pass it, judged by its length...
    const stored = await put(file);
    expect(stored.reply.status).toBe(200);
    const byLength = await put(file);
    await asProblem(byLength.reply);
    // ...or, without a length, as its bytes arrive.
    const chunks = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < file.byteLength; i += 100) c.enqueue(file.subarray(i, i + 100));
        c.close();
      },
    });
    await asProblem((await put(chunks, true)).reply);
    expect((await b.uploads.status(index, byLength.indexVersion)).state).toBe("awaiting_upload");

    // At the quota exactly, a start is refused at once.
    const rest = new Uint8Array(1000 - file.byteLength).fill(0x20);
    const filling = await put(rest);
    expect(filling.reply.status).toBe(200);
    const refused = await world.b.session.post("/v1/uploads/start", { indexName: index });
    expect(quotaProblem(refused, 403).errors).toEqual([{ field: "quota.uploadBytes", message: "at most 1000" }]);
    await expect(b.uploads.start(index)).rejects.toBeInstanceOf(SiftError);

    // An ingest that ends frees its bytes.
    await b.uploads.complete({ indexName: index, indexVersion: stored.indexVersion });
    await b.waitForIngest(index, stored.indexVersion);
    expect((await put(file)).reply.status).toBe(200);
  });
});
