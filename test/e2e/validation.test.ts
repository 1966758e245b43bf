// Client mistakes get a 400 (or 413/415/404) problem document naming the field, never a 500 and
// never a stack trace. Through the contract-validating proxy, with small body limits.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ok } from "../support/contract.ts";
import { Http, type Reply } from "../support/http.ts";
import { startWorld, type World } from "../support/world.ts";

let world: World;
beforeAll(async () => {
  world = await startWorld({ SIFT_MAX_BODY_BYTES: "4096" });
});
afterAll(() => world?.stop());

function problem(reply: Reply, status: number) {
  ok(reply, status);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
  expect(reply.body).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String) });
  expect(reply.text).not.toMatch(/\bat .*\.ts:\d+|node:internal|Error:/);
  return reply.body as { detail: string; errors?: { field: string; message: string }[]; resultCode: string };
}

const base = () => `/v1/search?serviceName=${world.a.service}&indexName=${world.a.publicIndex}`;
/** Test tables are built before the world exists: `BASE` stands for the search path. */
const at = (path: string) => path.replace("BASE", base());

describe("search parameters", () => {
  test.each([
    ["missing query", "BASE", "query", "is required"],
    ["missing indexName", "/v1/search?query=a&serviceName=x", "indexName", "is required"],
    ["limit not a number", "BASE&query=a&limit=ten", "limit", "must be an integer"],
    ["limit too large", "BASE&query=a&limit=1000", "limit", "must be <= 100"],
    ["latitude out of range", "BASE&query=a&latitude=91&longitude=0", "latitude", "must be <= 90"],
    ["scope unknown", "BASE&query=a&scope=everything", "scope", "must be one of: title, all"],
    ["weighted not boolean", "BASE&query=a&weighted=maybe", "weighted", "must be of type boolean"],
    ["typoTolerance not boolean", "BASE&query=a&typoTolerance=maybe", "typoTolerance", "must be of type boolean"],
    ["highlight not boolean", "BASE&query=a&highlight=yes", "highlight", "must be of type boolean"],
    ["longitude without latitude", "BASE&query=a&longitude=2.35", "latitude", "is required when longitude is given"],
    ["bad version", "BASE&query=a&version=latest", "version", expect.stringMatching(/must match pattern/)],
  ])("%s → 400 naming %s", async (_name, path, field, message) => {
    const body = problem(await world.http.get(at(path)), 400);
    expect(body.errors).toContainEqual({ field, message });
    expect(body.resultCode).toBe("INVALID_ARGUMENT");
  });

  test("a filter that does not parse is 400 naming filter", async () => {
    const body = problem(await world.http.get(`${base()}&query=a&filter=${encodeURIComponent("data.price <")}`), 400);
    expect(body.errors![0]!.field).toBe("filter");
  });

  test("an unknown region is 400 naming regionId", async () => {
    const body = problem(await world.http.get(`${base()}&query=a&regionId=atlantis`), 400);
    expect(body.errors![0]!.field).toBe("regionId");
  });
});

describe("request bodies", () => {
  const path = () => `/v1/indexes/${world.a.privateIndex}/records/v1`;

  test("malformed JSON is 400 with the line and column", async () => {
    // Straight to the server: Prism's proxy never answers a request whose JSON does not parse.
    const direct = new Http(world.server.url);
    const reply = await direct.request("PUT", path(), {
      key: world.a.keys.svc,
      body: '{\n  "title": "x",\n  "weight": 3,,\n}',
      headers: { "content-type": "application/json" },
    });
    const body = problem(reply, 400);
    expect(body.detail).toMatch(/not valid JSON at line 3, column \d+/);
    expect(body.errors![0]!.field).toBe("body");
  });

  test.each([
    [{ weight: 3 }, "title", "is required"],
    [{ title: 42 }, "title", "must be of type string"],
    [{ title: "x", weight: 0 }, "weight", "must be >= 1"],
    [{ title: "x", weight: 2.5 }, "weight", "must be an integer"],
    [{ title: "x", images: ["https://a.example/1.jpg", "not a url"] }, "images[1]", 'must match format "uri"'],
    [{ title: "x", latitude: "north" }, "latitude", expect.stringMatching(/must match pattern/)],
    [{ title: "x", data: [1, 2] }, "data", "must be of type object"],
  ])("record %j → 400 naming %s", async (record, field, message) => {
    const body = problem(await world.a.session.put(path(), record), 400);
    expect(body.errors).toContainEqual({ field, message });
  });

  test("a latitude without a longitude is 400 naming longitude", async () => {
    const body = problem(await world.a.session.put(path(), { title: "x", latitude: "48.85" }), 400);
    expect(body.errors).toContainEqual({
      field: "longitude",
      message: "latitude and longitude must be given together",
    });
  });

  test("a body over the limit is 413; a non-JSON content type is 415", async () => {
    problem(await world.a.session.put(path(), { title: "x".repeat(5000) }), 413);
    const reply = await world.a.session.request("PUT", path(), {
      body: "title=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    problem(reply, 415);
  });

  test("a missing required body is 400", async () => {
    const body = problem(await world.a.session.request("POST", "/v1/services", {}), 400);
    expect(body.errors).toEqual([{ field: "body", message: "is required" }]);
  });

  test("services and indexes validate names and regions", async () => {
    const s = world.a.session;
    expect(problem(await s.post("/v1/services", { name: "Bad Name!" }), 400).errors![0]!.field).toBe("name");
    expect(problem(await s.post("/v1/services", { name: "ok-name", regions: ["mars"] }), 400).errors![0]!.field).toBe(
      "regions",
    );
    expect(
      problem(await s.post("/v1/indexes", { name: "x", serviceName: world.a.service, visibility: "SECRET" }), 400)
        .errors![0]!.field,
    ).toBe("visibility");
    problem(await s.post("/v1/indexes", { name: "x", serviceName: "no-such-service" }), 404);
    problem(await s.post("/v1/indexes", { name: world.a.publicIndex, serviceName: world.a.service }), 409);
  });
});

test("an unknown route is a 404 problem, not an HTML page", async () => {
  const reply = await fetch(`${world.server.url}/v1/nothing-here`);
  expect(reply.status).toBe(404);
  expect(reply.headers.get("content-type")).toBe("application/problem+json");
});

test("liveness and readiness answer with the store and engine up", async () => {
  const live = await world.http.get("/healthz");
  expect(live.body).toEqual({ status: "ok" });
  const ready = await world.http.get("/readyz");
  expect(ready.body).toEqual({ status: "ok", checks: { store: true, engine: true } });
});
