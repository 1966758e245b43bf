// The contract loader and validator (http/contract.ts) over real operations of the generated
// contract: query strings coerced to the types the contract declares, refusals that name each
// field, and problem+json shaped by the same mapping the app uses.
import { Hono } from "hono";
import { beforeAll, describe, expect, test } from "vitest";
import { loadContract, mountContract, type Contract, type Handlers } from "../../src/http/contract.ts";
import type { AppEnv } from "../../src/http/env.ts";
import { problemFor, problemResponse } from "../../src/http/problem.ts";

let contract: Contract;
let app: Hono<AppEnv>;

/** Handlers that answer the validated input, so a test sees exactly what a real handler receives. */
const echo = (c: Parameters<NonNullable<Handlers["Search_search"]>>[0], input: unknown) => c.json(input as object);
const handlers: Handlers = {
  Search_search: echo,
  Uploads_putBlob: echo,
  Records_upsert: echo,
  Services_create: echo,
  MultiSearch_multi: echo,
  ApiKeys_create: echo,
};

beforeAll(() => {
  contract = loadContract();
  app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    c.set("requestId", "req-1");
    await next();
  });
  mountContract(app, contract, handlers, { maxBodyBytes: 256 });
  app.onError((error, c) => {
    const problem = problemFor(error);
    return problem ? problemResponse(problem, c.get("requestId")) : c.text(`unmapped: ${error.message}`, 500);
  });
});

const get = async (url: string) => {
  const response = await app.request(url);
  return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
};
const send = async (method: string, url: string, body: string, contentType = "application/json") => {
  const response = await app.request(url, { method, body, headers: { "content-type": contentType } });
  return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
};
const search = (params: string) => get(`/v1/search?query=piz&serviceName=shop&indexName=food${params}`);

describe("the loaded contract", () => {
  // Validators compile on first use (D-327), so a schema Ajv cannot compile would otherwise show
  // only at the first request of its operation.
  test("every operation's validators compile, and say why a value is invalid", () => {
    let validators = 0;
    for (const op of contract.operations) {
      for (const validate of [op.validatePath, op.validateQuery, op.validateBody, op.items?.validate]) {
        if (!validate) continue;
        validators++;
        expect(() => validate({}), op.id).not.toThrow();
        expect(validate(42), op.id).toBe(false);
        expect(validate.errors?.[0]?.keyword, op.id).toBe("type");
      }
    }
    expect(validators).toBeGreaterThan(contract.operations.length * 2);
  });

  test("mounts every operation at its Hono path, with its scalar types and security", () => {
    const search = contract.byId.get("Search_search")!;
    expect(search).toMatchObject({ method: "get", path: "/v1/search", routePath: "/v1/search", jsonBody: undefined });
    expect(Object.fromEntries(search.coerce)).toMatchObject({
      query: "string",
      weighted: "boolean",
      latitude: "number",
      limit: "integer",
      scope: "string",
      version: "string",
    });
    const upsert = contract.byId.get("Records_upsert")!;
    expect(upsert).toMatchObject({
      method: "put",
      routePath: "/v1/indexes/:indexName/records/:recordId",
      jsonBody: { required: true },
    });
    // The MCP endpoint reads its own body (x-sift-raw-body): no schema is compiled for it.
    expect(contract.byId.get("Mcp_call")!.validateBody).toBeUndefined();
    // Security: "" is anonymous access.
    expect(search.security).toEqual(["", "ApiKeyBearer", "SessionCookie"]);
    expect(contract.byId.get("Auth_signup")!.security).toEqual([""]);
    expect(contract.byId.get("ApiKeys_list")!.security).toEqual(["SessionCookie"]);
  });
});

describe("query coercion", () => {
  test("booleans accept true/false and 1/0", async () => {
    for (const [text, value] of [
      ["true", true],
      ["1", true],
      ["false", false],
      ["0", false],
    ] as const) {
      expect((await search(`&weighted=${text}`)).body.query.weighted).toBe(value);
    }
  });

  test("numbers and integers become numbers; strings stay strings", async () => {
    const { status, body } = await search("&latitude=48.85&longitude=-25e-1&limit=7&version=3.1");
    expect(status).toBe(200);
    expect(body.query).toEqual({
      query: "piz",
      serviceName: "shop",
      indexName: "food",
      latitude: 48.85,
      longitude: -2.5,
      limit: 7,
      version: "3.1",
    });
  });

  test("a value that is not of the type is refused, naming the field", async () => {
    const cases: [string, string, string][] = [
      ["&weighted=yes", "weighted", "must be of type boolean"],
      ["&limit=ten", "limit", "must be an integer"],
      ["&latitude=north", "latitude", "must be of type number"],
      ["&latitude=91", "latitude", "must be <= 90"],
    ];
    for (const [params, field, message] of cases) {
      const reply = await search(params);
      expect(reply.status, params).toBe(400);
      expect(reply.body.errors, params).toEqual([{ field, message }]);
      expect(reply.body.detail).toBe(`invalid query parameter: ${field} ${message}`);
    }
    // A number that is not an integer fails both the type and the int32 format; each is listed.
    expect((await search("&limit=7.5")).body.errors).toEqual([
      { field: "limit", message: "must be an integer" },
      { field: "limit", message: 'must match format "int32"' },
    ]);
  });
});

describe("refusals as problem+json", () => {
  test("every invalid query parameter is named, in one problem", async () => {
    const reply = await get("/v1/search?serviceName=shop&indexName=food&limit=0&scope=everything");
    expect(reply.status).toBe(400);
    expect(reply.type).toBe("application/problem+json");
    expect(reply.body).toEqual({
      type: "https://sift.dev/problems/invalid-argument",
      title: "Invalid request",
      status: 400,
      detail: "invalid query parameter: query is required; scope must be one of: title, all; limit must be >= 1",
      resultCode: "INVALID_ARGUMENT",
      errors: [
        { field: "query", message: "is required" },
        { field: "scope", message: "must be one of: title, all" },
        { field: "limit", message: "must be >= 1" },
      ],
      requestId: "req-1",
    });
  });

  test("path parameters are checked against their patterns", async () => {
    const reply = await send("PUT", "/v1/indexes/-bad/records/r1", '{"title":"x"}');
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([
      { field: "indexName", message: 'must match pattern "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"' },
    ]);
  });

  test("a required integer query parameter is coerced, and refused when missing", async () => {
    const put = (query: string) => send("PUT", `/v1/blobs/upl_1?${query}`, "a,b\n", "text/csv");
    expect((await put("expires=1700000000000&signature=abc")).body.query).toEqual({
      expires: 1_700_000_000_000,
      signature: "abc",
    });
    expect((await put("signature=abc")).body.errors).toEqual([{ field: "expires", message: "is required" }]);
  });

  test("JSON bodies: each field at fault is named with its path", async () => {
    const reply = await send("POST", "/v1/services", JSON.stringify({ name: "Shop", regions: ["eu", 7], replicas: 9 }));
    expect(reply.status).toBe(400);
    expect(reply.body.detail).toMatch(/^invalid request body: /);
    expect(reply.body.errors).toEqual([
      { field: "name", message: 'must match pattern "^[a-z0-9][a-z0-9-]{0,62}$"' },
      { field: "regions[1]", message: "must be of type string" },
      { field: "replicas", message: "must be <= 5" },
    ]);
  });

  test("an integer a double does not hold exactly is refused, naming the field", async () => {
    // 1e308 is a whole number to JSON and to `integer`; the store refused it with a 500 (fuzzer).
    const key = (expiresAt: string) =>
      send("POST", "/v1/api-keys", `{"type":"svc","name":"k","expiresAt":${expiresAt}}`);
    for (const value of ["1e308", String(2 ** 53), String(-(2 ** 53))]) {
      const reply = await key(value);
      expect(reply.status, value).toBe(400);
      expect(reply.body.errors, value).toEqual([
        { field: "expiresAt", message: "must be an integer from -9007199254740991 to 9007199254740991" },
      ]);
    }
    expect((await key(String(2 ** 53 - 1))).body.body).toEqual({ type: "svc", name: "k", expiresAt: 2 ** 53 - 1 });
  });

  test("a body that is missing, not JSON, of another type or too large", async () => {
    const missing = await send("PUT", "/v1/indexes/food/records/r1", "");
    expect(missing.body).toMatchObject({
      status: 400,
      detail: "a JSON request body is required",
      errors: [{ field: "body", message: "is required" }],
    });

    // Where the parser names a position, the problem gives its line and column.
    const trailing = await send("PUT", "/v1/indexes/food/records/r1", '{"title":"x"}\n  x');
    expect(trailing.status).toBe(400);
    expect(trailing.body.detail).toBe("the request body is not valid JSON at line 2, column 3");
    expect(trailing.body.errors).toEqual([
      { field: "body", message: expect.stringMatching(/^is not valid JSON at line 2, column 3: /) },
    ]);
    const cut = await send("PUT", "/v1/indexes/food/records/r1", "[1,");
    expect(cut.body).toMatchObject({
      detail: "the request body is not valid JSON",
      errors: [{ field: "body", message: expect.stringMatching(/^is not valid JSON: /) }],
    });

    const text = await send("PUT", "/v1/indexes/food/records/r1", '{"title":"x"}', "text/plain");
    expect(text).toMatchObject({
      status: 415,
      body: { resultCode: "UNSUPPORTED_MEDIA_TYPE", detail: 'send the body as application/json (got "text/plain")' },
    });

    const large = await send("PUT", "/v1/indexes/food/records/r1", JSON.stringify({ title: "x".repeat(300) }));
    expect(large).toMatchObject({
      status: 413,
      body: { resultCode: "PAYLOAD_TOO_LARGE", detail: "the request body is larger than 256 bytes" },
    });
  });

  test("an operation without a handler answers 501", async () => {
    const reply = await get("/v1/services");
    expect(reply).toMatchObject({
      status: 501,
      body: { resultCode: "NOT_IMPLEMENTED", detail: "GET /v1/services is not available on this deployment yet" },
    });
  });
});

describe("the multi-search body: its searches fail one by one", () => {
  const ok = { query: "piz", serviceName: "s", indexName: "f" };

  test("each invalid search gets its own error naming the field, the valid ones none", async () => {
    const body = { searches: [ok, { ...ok, offset: 1001 }, { ...ok, limit: "5" }, { ...ok, query: "a\u0000b" }] };
    const { status, body: echoed } = await send("POST", "/v1/search/multi", JSON.stringify(body));
    expect(status).toBe(200);
    expect(echoed.body).toEqual(body);
    // Errors serialise to {} in the echo: their presence and order is what the handler sees.
    expect(echoed.itemErrors.map((e: unknown) => e !== null)).toEqual([false, true, true, true]);
  });

  test("the item errors say what is wrong in the words of GET /v1/search", async () => {
    const op = contract.byId.get("MultiSearch_multi")!;
    expect(op.items?.property).toBe("searches");
    expect(op.items!.validate({ ...ok, offset: 1001 })).toBe(false);
    expect(op.items!.validate({ ...ok, offset: 1000, facets: "data.a", maxFacetValues: 100, sort: "data.a:asc" })).toBe(
      true,
    );
  });

  test("the envelope is validated as a whole: no searches, more than 10, a search that is not an object", async () => {
    for (const [searches, field] of [
      [[], "searches"],
      [Array.from({ length: 11 }, () => ({})), "searches"],
      [[ok, "piz"], "searches[1]"],
    ] as const) {
      const { status, body } = await send("POST", "/v1/search/multi", JSON.stringify({ searches }));
      expect(status).toBe(400);
      expect(body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  test("a search takes exactly the parameters of GET /v1/search, with the same constraints", () => {
    const get = contract.document.paths["/v1/search"].get.parameters as { name: string; schema: object }[];
    const item = contract.document.components.schemas.MultiSearchQuery;
    expect(Object.keys(item.properties).sort()).toEqual(get.map((p) => p.name).sort());
    const strip = (schema: object) => {
      const { description: _, ...rest } = schema as Record<string, unknown>;
      return rest;
    };
    for (const p of get) expect(strip(item.properties[p.name]), p.name).toEqual(strip(p.schema));
  });
});

describe("the contract and the Host check", () => {
  test("every operation declares the 403 the Host check answers, except the probes it exempts", async () => {
    const { createRequire } = await import("node:module");
    const { readFileSync } = await import("node:fs");
    const path = createRequire(import.meta.url).resolve("@sift/contract/openapi.json");
    const document = JSON.parse(readFileSync(path, "utf8")) as {
      paths: Record<string, Record<string, { operationId?: string; responses?: Record<string, unknown> }>>;
    };
    const without: string[] = [];
    for (const operations of Object.values(document.paths)) {
      for (const operation of Object.values(operations)) {
        if (operation.responses && !operation.responses["403"]) without.push(operation.operationId ?? "?");
      }
    }
    // /healthz and /readyz answer any Host: load balancers probe them by address.
    expect(without.sort()).toEqual(["Health_live", "Health_ready"]);
  });
});
