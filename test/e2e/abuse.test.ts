// Inputs a hostile or careless client sends that once broke an index or the server (issue 15):
// text no store can hold and documents nested thousands deep are a 400 naming the field, before
// anything is written, and the index stays writable. Straight to the server: this is about what
// the server does, not about what the contract's mock would say.
import { request as httpRequest } from "node:http";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createClient, SiftIngestFailedError, type SiftClient } from "@sift/sdk";
import { ok } from "../support/contract.ts";
import { Http, type Reply } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
let direct: Http;
let sift: SiftClient;

beforeAll(async () => {
  world = await startWorld();
  direct = new Http(world.server.url);
  sift = createClient({ baseUrl: world.server.url, apiKey: world.a.keys.adm });
});
afterAll(() => world?.stop());

function problem(reply: Reply, status: number) {
  ok(reply, status);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
  return reply.body as { detail: string; errors?: { field: string; message: string; line?: number }[] };
}

let n = 0;
async function freshIndex(): Promise<string> {
  const name = `abuse-${++n}`;
  await sift.indexes.create({ name, serviceName: world.a.service, visibility: "PRIVATE" });
  return name;
}
const as = (key: string) => ({ key, headers: { "content-type": "application/json" } });
const put = (index: string, id: string, record: unknown) =>
  direct.request("PUT", `/v1/indexes/${index}/records/${id}`, {
    ...as(world.a.keys.svc),
    body: typeof record === "string" ? record : JSON.stringify(record),
  });
const version = async (index: string) => (await sift.indexes.get(index)).activeVersion;

describe("text no store can hold", () => {
  test("a record id with NUL is 400 naming id, by PUT and DELETE, and the index stays writable", async () => {
    const index = await freshIndex();
    ok(await put(index, "a", { title: "Before" }), 200);
    const before = await version(index);
    // NUL, and the noncharacter U+FFFE.
    for (const id of ["a%00b", "a%EF%BF%BEb"]) {
      const reply = await put(index, id, { title: "Never" });
      expect(problem(reply, 400).errors).toEqual([{ field: "recordId", message: expect.stringMatching(/^contains/) }]);
    }
    const deleted = await direct.request("DELETE", `/v1/indexes/${index}/records/a%00b`, as(world.a.keys.svc));
    expect(problem(deleted, 400).errors![0]!.field).toBe("recordId");
    expect(await version(index)).toBe(before);
    // The engine and the store still agree: the next writes succeed and are searchable.
    ok(await put(index, "b", { title: "After" }), 200);
    ok(await direct.request("DELETE", `/v1/indexes/${index}/records/a`, as(world.a.keys.svc)), 200);
    const titles = (await sift.search({ query: "after", indexName: index, serviceName: world.a.service })).suggestions;
    expect(titles.map((s) => s.title)).toEqual(["After"]);
  });

  test("NUL, noncharacters and unpaired surrogates in body strings and keys are 400 naming the path", async () => {
    const index = await freshIndex();
    const cases: [string, string][] = [
      ['{"title":"x\\u0000y"}', "title"],
      ['{"title":"ok","data":{"tags":["fine","bad\\uffff"]}}', "data.tags[1]"],
      ['{"title":"ok","data":{"k\\u0000":1}}', "data"],
      ['{"title":"ok","data":{"note":"\\ud800"}}', "data.note"],
    ];
    for (const [body, field] of cases) {
      const reply = await direct.request("PUT", `/v1/indexes/${index}/records/r`, { ...as(world.a.keys.svc), body });
      expect(problem(reply, 400).errors).toEqual([{ field, message: expect.stringMatching(/contains/) }]);
    }
    // Accounts, keys and names: the same refusal, never a 500.
    const signup = await direct.request("POST", "/v1/auth/signup", {
      body: JSON.stringify({ email: "nul\u0000@x.example", password: "correct horse battery staple" }),
      headers: { "content-type": "application/json" },
    });
    expect(problem(signup, 400).errors![0]!.field).toBe("email");
    const named = await direct.request("POST", "/v1/api-keys", {
      ...as(world.a.keys.adm),
      body: JSON.stringify({ type: "srh", name: "a\u0000b" }),
    });
    expect(problem(named, 400).errors![0]!.field).toBe("name");
    const lookup = await direct.request("GET", "/v1/indexes/x%00y", as(world.a.keys.adm));
    expect(problem(lookup, 400).errors![0]!.field).toBe("indexName");
    const search = await direct.get(
      `/v1/search?query=a%00&indexName=${world.a.publicIndex}&serviceName=${world.a.service}`,
    );
    expect(problem(search, 400).errors![0]!.field).toBe("query");
    expect(await version(index)).toBe("0");
  });

  test("data nested 5,000 deep is 400; 200 deep is stored and read back", async () => {
    const index = await freshIndex();
    const nest = (depth: number) => {
      let value: unknown = "bottom";
      for (let i = 0; i < depth; i++) value = { d: value };
      return value;
    };
    // Written as text: JSON.stringify of it would exhaust this test's own stack.
    const deep = await put(index, "deep", `{"title":"Deep","data":${'{"d":'.repeat(5000)}"bottom"${"}".repeat(5000)}}`);
    expect(problem(deep, 400).errors![0]!.message).toMatch(/nested more than 256 levels/);
    ok(await put(index, "fine", { title: "Fine", data: nest(200) }), 200);
    const record = ok(await direct.request("GET", `/v1/indexes/${index}/records/fine`, as(world.a.keys.svc)));
    expect(JSON.stringify(record.data)).toBe(JSON.stringify(nest(200)));
  });

  test("a bulk file line with such an id fails with its line number; nothing of the file is written", async () => {
    const index = await freshIndex();
    const lines = ['{"id":"ok","title":"Fine"}', '{"id":"a\\u0000b","title":"Nul"}', '{"id":"c","title":"Also fine"}'];
    const { indexVersion } = await sift.uploadFile(index, new TextEncoder().encode(lines.join("\n")));
    const error = await sift.waitForIngest(index, indexVersion).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SiftIngestFailedError);
    const status = (error as SiftIngestFailedError).status;
    expect(status.errors.map((e) => [e.line, e.field])).toEqual([[2, "id"]]);
    expect(await version(index)).toBe("0");
    ok(await put(index, "later", { title: "Later" }), 200);
  });
});

describe("the index lookup cache", () => {
  test("an index looked up while missing can be created at once, then read and written", async () => {
    const name = `abuse-late-${process.pid}`;
    problem(await direct.request("GET", `/v1/indexes/${name}`, as(world.a.keys.adm)), 404);
    const created = await direct.request("POST", "/v1/indexes", {
      ...as(world.a.keys.adm),
      body: JSON.stringify({ name, serviceName: world.a.service, visibility: "PRIVATE" }),
    });
    expect(ok(created, 201).name).toBe(name);
    expect(ok(await direct.request("GET", `/v1/indexes/${name}`, as(world.a.keys.adm))).activeVersion).toBe("0");
    ok(await put(name, "first", { title: "First" }), 200);
  });
});

/**
 * 4 MiB without a Content-Length: 64 chunks of 64 KiB, one every 5 ms, so the server, refusing
 * once the limit (1 MiB) is passed, answers long before the last. `sent` counts the chunks asked for.
 */
function slowBody(): { stream: ReadableStream<Uint8Array>; sent: () => number } {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (sent++ >= 64) controller.close();
      else controller.enqueue(new Uint8Array(64 * 1024).fill(32));
    },
  });
  return { stream, sent: () => sent };
}

describe("bodies are bounded while they are read", () => {
  const mcpCall = (body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${world.server.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${world.a.keys.srh}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
      duplex: "half",
    } as RequestInit);

  test("POST /mcp with a public search key: over the body limit is 413, by length or while streaming", async () => {
    const big = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${"x".repeat(2 * 1024 * 1024)}"}}`;
    const declared = await mcpCall(big);
    expect(declared.status).toBe(413);
    expect(declared.headers.get("content-type")).toBe("application/problem+json");
    const { stream, sent } = slowBody();
    const streamed = await mcpCall(stream);
    expect(streamed.status).toBe(413);
    expect(sent()).toBeLessThan(64);
    // A call within the limit still works.
    const ping = await mcpCall('{"jsonrpc":"2.0","id":2,"method":"ping"}');
    expect(ping.status).toBe(200);
    expect(await ping.json()).toMatchObject({ jsonrpc: "2.0", id: 2, result: {} });
  });

  test("a record write streamed past the body limit is 413, and the next write works", async () => {
    const record = (body: BodyInit) =>
      fetch(`${world.server.url}/v1/indexes/${world.a.publicIndex}/records/streamed`, {
        method: "PUT",
        headers: { authorization: `Bearer ${world.a.keys.adm}`, "content-type": "application/json" },
        body,
        duplex: "half",
      } as RequestInit);
    const { stream, sent } = slowBody();
    const refused = await record(stream);
    expect(refused.status).toBe(413);
    expect(refused.headers.get("content-type")).toBe("application/problem+json");
    expect(sent()).toBeLessThan(64);
    const written = await record(JSON.stringify({ title: "Streamed" }));
    expect(written.status).toBe(200);
  });
});

describe("slow and stalled requests", () => {
  let slow: World;
  beforeAll(async () => {
    slow = await startWorld({ SIFT_IDLE_TIMEOUT_SECONDS: "1" });
  });
  afterAll(() => slow?.stop());
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const line = (i: number) => new TextEncoder().encode(`{"id":"${i}","title":"Slow ${i}"}\n`);

  test("an upload that keeps sending is not cut; one that stalls is closed after the idle timeout", async () => {
    const client = createClient({ baseUrl: slow.server.url, apiKey: slow.a.keys.adm });
    const name = "slow-upload";
    await client.indexes.create({ name, serviceName: slow.a.service, visibility: "PRIVATE" });
    // 12 lines, one every 300 ms: 3.6 s in all, longer than the idle timeout (1 s) but never idle that long.
    const first = await client.uploads.start(name);
    let sent = 0;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent === 12) return controller.close();
        await pause(300);
        controller.enqueue(line(sent++));
      },
    });
    const put = await fetch(first.uploadUrl, { method: "PUT", body: trickle, duplex: "half" } as RequestInit);
    expect(put.status).toBe(200);
    await client.uploads.complete({ indexName: name, indexVersion: first.indexVersion });
    await client.waitForIngest(name, first.indexVersion);
    expect(
      (await client.search({ query: "slow", indexName: name, serviceName: slow.a.service })).suggestions,
    ).toHaveLength(10);
    // One line of a declared megabyte, then nothing: the server closes the connection instead of
    // holding it for minutes. (node:http: fetch never settles while its body stream is pending.)
    const second = await client.uploads.start(name);
    const started = Date.now();
    const outcome = await new Promise<string>((resolve) => {
      const request = httpRequest(second.uploadUrl, { method: "PUT", headers: { "content-length": "1048576" } });
      request.on("response", (response) => resolve(`answered ${response.statusCode}`));
      request.on("error", () => resolve("closed"));
      request.on("close", () => resolve("closed"));
      request.write(line(99));
    });
    expect(outcome).toBe("closed");
    expect(Date.now() - started).toBeLessThan(8_000);
  }, 30_000);
});

describe("password guessing", () => {
  test("after 5 wrong passwords an account's log-ins wait, 429 with Retry-After, the password unchecked", async () => {
    const email = `guess-${process.pid}@x.example`;
    const password = "correct horse battery staple";
    ok(await world.http.fresh().post("/v1/auth/signup", { email, password }), 201);
    const login = (pw: string) => world.http.fresh().post("/v1/auth/login", { email, password: pw });
    for (let i = 0; i < 5; i++) problem(await login(`wrong ${i}`), 401);
    // The sixth wrong one still counts, and from then on even the right password must wait.
    problem(await login("wrong again"), 401);
    const held = await login(password);
    const body = problem(held, 429) as { resultCode?: string };
    expect(body.resultCode).toBe("RATE_LIMITED");
    const retryAfter = Number(held.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    ok(await login(password), 200);
    // A success clears the account's count: one wrong password is a plain 401 again.
    problem(await login("wrong after"), 401);
    ok(await login(password), 200);
  });
});

describe("tenant quotas", () => {
  let small: World;
  beforeAll(async () => {
    small = await startWorld({ SIFT_QUOTA_INDEXES: "3" });
  });
  afterAll(() => small?.stop());

  test("an index beyond the quota is 403 QUOTA_EXCEEDED naming it; deleting one makes room", async () => {
    const s = small.a.session;
    // Each tenant of the world starts with two indexes.
    const create = (name: string) => s.post("/v1/indexes", { name, serviceName: small.a.service });
    ok(await create("third"), 201);
    const refused = await create("fourth");
    const body = problem(refused, 403) as { resultCode?: string; errors?: { field: string; message: string }[] };
    expect(body.resultCode).toBe("QUOTA_EXCEEDED");
    expect(body.errors).toEqual([{ field: "quota.indexes", message: "at most 3" }]);
    // The other tenant has a quota of its own.
    ok(await small.b.session.post("/v1/indexes", { name: "third", serviceName: small.b.service }), 201);
    ok(await s.delete("/v1/indexes/third"), 204);
    ok(await create("fourth"), 201);
  });
});

describe("upload limits", () => {
  let limited: World;
  let client: SiftClient;
  beforeAll(async () => {
    limited = await startWorld({ SIFT_MAX_UPLOAD_RECORDS: "100", SIFT_MAX_UPLOAD_BYTES: String(64 * 1024) });
    client = createClient({ baseUrl: limited.server.url, apiKey: limited.a.keys.adm });
  });
  afterAll(() => limited?.stop());

  const lines = (count: number) =>
    Array.from({ length: count }, (_, i) => `{"id":"${i}","title":"Record ${i}"}`).join("\n");
  const ingest = async (index: string, bytes: Uint8Array) => {
    const { indexVersion } = await client.uploadFile(index, bytes);
    return client.waitForIngest(index, indexVersion).then(
      () => "succeeded",
      (error: unknown) => (error instanceof SiftIngestFailedError ? error.status.failureReason : String(error)),
    );
  };

  test("a gzip that expands past the upload limit, or a file past the record limit, fails saying which", async () => {
    await client.indexes.create({ name: "limits", serviceName: limited.a.service, visibility: "PRIVATE" });
    // Fewer records than the record limit, so that only the size can be what it says (40,000
    // small ones sometimes reached the record limit first, in one batch, before the next chunk).
    const padding = "Padding ".repeat(250);
    const bomb = gzipSync(
      Buffer.from(Array.from({ length: 60 }, (_, i) => `{"id":"x${i}","title":"${padding}"}\n`).join("")),
    );
    expect(bomb.byteLength).toBeLessThan(64 * 1024);
    expect(await ingest("limits", bomb)).toMatch(/expands to more than 65536 bytes once decompressed/);
    expect(await ingest("limits", new TextEncoder().encode(lines(150)))).toMatch(
      /holds more than 100 records.*SIFT_MAX_UPLOAD_RECORDS/,
    );
    expect(await ingest("limits", new TextEncoder().encode(lines(100)))).toBe("succeeded");
    expect((await client.indexes.get("limits")).records).toBe(100);
  });
});
