// The MCP endpoint seen by three outside clients (the SDK's Client over Streamable HTTP, raw
// JSON-RPC, the MCP Inspector CLI) and through the stdio bin; all must agree with REST search.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult, CompatibilityCallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, assert, describe, expect, test } from "vitest";
import { expectContract } from "../support/contract.ts";
import { startWorld, type World } from "../support/world.ts";

const require = createRequire(import.meta.url);
const inspectorCli = resolve(
  require.resolve("@modelcontextprotocol/inspector/package.json"),
  "../clients/launcher/build/index.js",
);
const stdioBin = resolve(require.resolve("@sift/mcp/package.json"), "../bin/sift-mcp.js");
const run = promisify(execFile);

let world: World;
let index: string;
const places = [
  {
    id: "springfield-il",
    title: "Springfield",
    weight: 114000,
    latitude: "39.7817",
    longitude: "-89.6501",
    data: { state: "IL" },
  },
  {
    id: "springfield-ma",
    title: "Springfield",
    weight: 155000,
    latitude: "42.1015",
    longitude: "-72.5898",
    data: { state: "MA" },
  },
  {
    id: "spring-hill",
    title: "Spring Hill",
    weight: 113000,
    latitude: "28.4769",
    longitude: "-82.5254",
    data: { state: "FL" },
  },
  {
    id: "palm-springs",
    title: "Palm Springs",
    weight: 44000,
    latitude: "33.8303",
    longitude: "-116.5453",
    data: { state: "CA" },
  },
  { id: "boston", title: "Boston", weight: 650000, latitude: "42.3601", longitude: "-71.0589", data: { state: "MA" } },
];

beforeAll(async () => {
  world = await startWorld();
  index = world.a.publicIndex;
  for (const p of places) {
    const { id, ...body } = p;
    const reply = await world.a.session.put(`/v1/indexes/${index}/records/${id}`, body);
    expect(reply.status).toBe(200);
  }
});
afterAll(() => world?.stop());

const restIds = async (phrase: string, geo?: { latitude: string; longitude: string }) => {
  const q = new URLSearchParams({ query: phrase, indexName: index, serviceName: world.a.service, ...(geo ?? {}) });
  const reply = await world.http.get(`/v1/search?${q}`, { key: world.a.keys.svc });
  expect(reply.status).toBe(200);
  return reply.body.suggestions.map((s: { id: string }) => s.id) as string[];
};

/**
 * callTool's type also admits the legacy `{ toolResult }` shape (protocol 2024-10-07), which Sift
 * never answers with; `"content" in` cannot narrow it away (both shapes have index signatures).
 */
const hasContent = (result: CompatibilityCallToolResult): result is CallToolResult => Array.isArray(result.content);

/** The text of a tool result's first content block: Sift's tools answer with text. */
function firstText(result: CompatibilityCallToolResult): string {
  assert(hasContent(result), `a tool result without content: ${JSON.stringify(result)}`);
  const first = result.content[0];
  assert(first?.type === "text", `the first content block is not text: ${JSON.stringify(first)}`);
  return first.text;
}

const parseText = (result: CompatibilityCallToolResult) => JSON.parse(firstText(result));

async function rpc(body: unknown, options: { key?: string; headers?: Record<string, string> } = {}) {
  const reply = await world.http.request("POST", "/mcp", {
    json: body,
    ...(options.key !== undefined ? { key: options.key } : { key: world.a.keys.svc }),
    headers: { ...options.headers },
  });
  expectContract(reply);
  return reply;
}

describe("the SDK's Client over Streamable HTTP", () => {
  let client: Client;
  beforeAll(async () => {
    client = new Client({ name: "sift-test", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${world.prism.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${world.a.keys.svc}` } },
      }),
    );
  });
  afterAll(() => client?.close());

  test("initialize negotiates and names the server", () => {
    expect(client.getServerVersion()).toMatchObject({ name: "sift" });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
  });

  test("tools/list lists exactly listIndexes, search and lookupById, read-only, with schemas", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["listIndexes", "lookupById", "search"]);
    const search = tools.find((t) => t.name === "search")!;
    expect(Object.keys(search.inputSchema.properties!).sort()).toEqual([
      "filter",
      "indexName",
      "latitude",
      "limit",
      "longitude",
      "phrase",
      "typoTolerance",
      "version",
      "weighted",
    ]);
    expect(search.inputSchema.required!.sort()).toEqual(["indexName", "phrase"]);
    const lookup = tools.find((t) => t.name === "lookupById")!;
    expect(lookup.inputSchema.required!.sort()).toEqual(["id", "indexName"]);
    for (const t of tools) {
      expect(t.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(t.description!.length).toBeGreaterThan(60);
    }
  });

  test("search answers the documented envelope (docs/api.md, MCP) with the same results as REST, with and without geo", async () => {
    const plain = await client.callTool({ name: "search", arguments: { indexName: index, phrase: "spring" } });
    expect(plain.isError).toBe(false);
    const body = parseText(plain);
    expect(Object.keys(body).sort()).toEqual([
      "indexName",
      "indexVersion",
      "phrase",
      "results",
      "totalHits",
      "totalHitsExact",
    ]);
    expect(body).toMatchObject({ indexName: index, phrase: "spring" });
    expect(body.results.map((r: { id: string }) => r.id)).toEqual(await restIds("spring"));
    expect(body.results.map((r: { id: string }) => r.id)).toContain("spring-hill");
    expect(body.results[0]).toHaveProperty("title");
    // The same object as structured content, checked by the client against the tool's outputSchema.
    expect(plain.structuredContent).toEqual(body);

    const nearBoston = { latitude: "42.36", longitude: "-71.06" };
    const geo = parseText(
      await client.callTool({ name: "search", arguments: { indexName: index, phrase: "springfield", ...nearBoston } }),
    );
    expect(geo.results.map((r: { id: string }) => r.id)).toEqual(await restIds("springfield", nearBoston));
    expect(geo.results[0].id).toBe("springfield-ma");
    // Coordinates as numbers, as most hosts send them, rank the same.
    const numeric = parseText(
      await client.callTool({
        name: "search",
        arguments: { indexName: index, phrase: "springfield", latitude: 42.36, longitude: -71.06 },
      }),
    );
    expect(numeric.results).toEqual(geo.results);
  });

  test("search results carry each title's highlight; typoTolerance is accepted as a boolean or a string", async () => {
    const body = parseText(
      await client.callTool({ name: "search", arguments: { indexName: index, phrase: "palm spr" } }),
    );
    expect(body.results).toEqual([
      expect.objectContaining({
        id: "palm-springs",
        highlight: {
          title: [
            [0, 4],
            [5, 8],
          ],
        },
      }),
    ]);
    for (const typoTolerance of [false, "false", true, "true"]) {
      const result = await client.callTool({
        name: "search",
        arguments: { indexName: index, phrase: "springf", typoTolerance },
      });
      expect(result.isError, String(typoTolerance)).toBe(false);
      const found = parseText(result).results.map((r: { id: string }) => r.id);
      // With typos, "springf" may also reach "Spring Hill" (one edit from "spring") once the
      // engine matches typos; without them, only the exact prefixes.
      expect(found).toEqual(expect.arrayContaining(["springfield-il", "springfield-ma"]));
      if (String(typoTolerance) === "false") expect(found).toHaveLength(2);
    }
    const refused = await client.callTool({
      name: "search",
      arguments: { indexName: index, phrase: "spring", typoTolerance: "maybe" },
    });
    expect(refused.isError).toBe(true);
    expect(firstText(refused)).toMatch(/typoTolerance must be true or false/);
  });

  test("search takes a filter and a limit; totalHits counts every match, not only those returned", async () => {
    const call = async (extra: Record<string, unknown>) =>
      client.callTool({ name: "search", arguments: { indexName: index, phrase: "spring", ...extra } });
    const one = parseText(await call({ limit: 1 }));
    expect(one.results).toHaveLength(1);
    expect(one).toMatchObject({ totalHits: 4, totalHitsExact: true });
    const ma = parseText(await call({ filter: 'data.state = "MA"' }));
    expect(ma.results.map((r: { id: string }) => r.id)).toEqual(["springfield-ma"]);
    expect(ma.totalHits).toBe(1);
    const broken = await call({ filter: "data.state <" });
    expect(broken.isError).toBe(true);
    expect(firstText(broken)).toMatch(/^filter: at character 13: /);
  });

  test("listIndexes names the tenant's indexes with what REST says of them, and no other tenant's", async () => {
    const result = await client.callTool({ name: "listIndexes", arguments: {} });
    expect(result.isError).toBe(false);
    const { indexes } = result.structuredContent as { indexes: Record<string, unknown>[] };
    expect(indexes.map((i) => i.name).sort()).toEqual([world.a.privateIndex, world.a.publicIndex].sort());
    for (const listed of indexes) {
      const rest = (await world.a.session.get(`/v1/indexes/${listed.name}`)).body;
      expect(listed).toEqual({
        name: rest.name,
        serviceName: world.a.service,
        visibility: rest.visibility,
        activeVersion: rest.activeVersion,
        records: rest.records,
      });
    }
    expect(indexes.find((i) => i.name === index)).toMatchObject({ visibility: "PUBLIC", records: places.length + 1 });
    // A name from the list is one search accepts.
    const found = await client.callTool({
      name: "search",
      arguments: { indexName: indexes[0]!.name as string, phrase: "amster" },
    });
    expect(parseText(found).results.map((r: { id: string }) => r.id)).toEqual(["r1"]);
  });

  test("search takes weighted and version, as REST does", async () => {
    const call = async (extra: Record<string, unknown>) =>
      parseText(await client.callTool({ name: "search", arguments: { indexName: index, phrase: "spring", ...extra } }));
    const rest = async (extra: Record<string, string>) => {
      const q = new URLSearchParams({ query: "spring", indexName: index, serviceName: world.a.service, ...extra });
      return (await world.http.get(`/v1/search?${q}`, { key: world.a.keys.svc })).body.suggestions.map(
        (s: { id: string }) => s.id,
      );
    };
    const weighted = (await call({ weighted: true })).results.map((r: { id: string }) => r.id);
    expect(weighted).toEqual(await rest({ weighted: "true" }));
    // Springfield MA (155,000) before Springfield IL (114,000) only when weighted.
    expect(weighted.indexOf("springfield-ma")).toBeLessThan(weighted.indexOf("springfield-il"));

    // A version from before a new record still answers without it.
    const before = (await call({})).indexVersion;
    const put = await world.a.session.put(`/v1/indexes/${index}/records/spring-valley`, { title: "Spring Valley" });
    expect(put.status).toBe(200);
    const now = await call({});
    expect(now.indexVersion).not.toBe(before);
    expect(now.results.map((r: { id: string }) => r.id)).toContain("spring-valley");
    const old = await call({ version: before });
    expect(old.indexVersion).toBe(before);
    expect(old.results.map((r: { id: string }) => r.id)).not.toContain("spring-valley");
    expect(old.results.map((r: { id: string }) => r.id)).toEqual(await rest({ version: before }));
    const gone = await client.callTool({
      name: "search",
      arguments: { indexName: index, phrase: "a", version: "999" },
    });
    expect(gone.isError).toBe(true);
    expect(firstText(gone)).toMatch(/version 999 of index .* does not exist/);
    const del = await world.a.session.request("DELETE", `/v1/indexes/${index}/records/spring-valley`);
    expect(del.status).toBe(200);
  });

  test("search always reads the active version", async () => {
    const live = (await world.a.session.get(`/v1/indexes/${index}`)).body.activeVersion;
    const body = parseText(
      await client.callTool({ name: "search", arguments: { indexName: index, phrase: "boston" } }),
    );
    expect(body.indexVersion).toBe(live);
  });

  test("lookupById returns the record; a missing one is isError with a message a model can act on", async () => {
    const found = await client.callTool({ name: "lookupById", arguments: { indexName: index, id: "boston" } });
    expect(found.isError).toBe(false);
    expect(parseText(found).record).toEqual({
      ...places.find((p) => p.id === "boston")!,
      weight: 650000,
    });
    const missing = await client.callTool({ name: "lookupById", arguments: { indexName: index, id: "atlantis" } });
    expect(missing.isError).toBe(true);
    expect(firstText(missing)).toMatch(/No record with id "atlantis"/);
  });

  test("bad arguments come back as isError, not as protocol errors", async () => {
    const noPhrase = await client.callTool({ name: "search", arguments: { indexName: index } });
    expect(noPhrase.isError).toBe(true);
    const badLat = await client.callTool({
      name: "search",
      arguments: { indexName: index, phrase: "a", latitude: "north", longitude: "1" },
    });
    expect(badLat.isError).toBe(true);
    expect(firstText(badLat)).toMatch(/latitude must be a decimal number/);
    const half = await client.callTool({ name: "search", arguments: { indexName: index, phrase: "a", latitude: "1" } });
    expect(firstText(half)).toBe("Give both latitude and longitude, or neither.");
  });

  test("another tenant's index is indistinguishable from a missing one", async () => {
    const other = await client.callTool({
      name: "search",
      arguments: { indexName: world.b.privateIndex, phrase: "a" },
    });
    const missing = await client.callTool({ name: "search", arguments: { indexName: "no-such-index", phrase: "a" } });
    expect(other.isError && missing.isError).toBe(true);
    expect(firstText(other).replace(world.b.privateIndex, "X")).toBe(firstText(missing).replace("no-such-index", "X"));
  });
});

describe("listIndexes shows what the key may search", () => {
  const listed = async (key: string) => {
    const reply = await rpc(
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "listIndexes", arguments: {} } },
      { key },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.result.isError).toBe(false);
    return reply.body.result.structuredContent.indexes.map((i: { name: string }) => i.name) as string[];
  };

  test("a public srh key sees the PUBLIC index only; a key with an index list sees those listed", async () => {
    expect(await listed(world.a.keys.srh)).toEqual([world.a.publicIndex]);
    const created = await world.a.session.post("/v1/api-keys", {
      type: "svc",
      name: "private only",
      indexes: [world.a.privateIndex],
    });
    expect(created.status).toBe(200);
    expect(await listed(created.body.key)).toEqual([world.a.privateIndex]);
    expect(await listed(world.b.keys.pat)).toEqual([world.b.privateIndex, world.b.publicIndex].sort());
  });
});

describe("raw JSON-RPC over HTTP", () => {
  const init = (protocolVersion: string) => ({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: "curl", version: "8" } },
  });

  test.each(["2024-11-05", "2025-06-18", "2025-11-25"])(
    "initialize with %s negotiates that version",
    async (version) => {
      const reply = await rpc(init(version), { headers: { accept: "application/json" } });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({
        jsonrpc: "2.0",
        id: 1,
        result: { protocolVersion: version, serverInfo: { name: "sift" } },
      });
      expect(reply.headers.get("mcp-session-id")).toBeNull();
    },
  );

  test("tools/call returns { content: [{ type: 'text', text }], structuredContent, isError }", async () => {
    const reply = await rpc({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "search", arguments: { indexName: index, phrase: "palm" } },
    });
    expect(reply.body.id).toBe(7);
    expect(reply.body.result).toEqual({
      content: [{ type: "text", text: expect.any(String) }],
      structuredContent: expect.any(Object),
      isError: false,
    });
    expect(JSON.parse(reply.body.result.content[0].text).results.map((r: { id: string }) => r.id)).toEqual([
      "palm-springs",
    ]);
    expect(reply.body.result.structuredContent).toEqual(JSON.parse(reply.body.result.content[0].text));
  });

  test("protocol errors use JSON-RPC codes", async () => {
    const unknown = await rpc({ jsonrpc: "2.0", id: 2, method: "resources/list" });
    expect(unknown.body.error.code).toBe(-32601);
    const notJson = await fetch(`${world.server.url}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${world.a.keys.svc}`, "content-type": "application/json" },
      body: "{not json",
    });
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.code).toBe(-32700);
  });

  test("a notification is accepted with 202 and no body", async () => {
    const reply = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect(reply.status).toBe(202);
    expect(reply.text).toBe("");
  });

  test("no key is 401; a session cookie is 401; GET and DELETE are 405", async () => {
    expect((await world.http.fresh().request("POST", "/mcp", { json: init("2024-11-05") })).status).toBe(401);
    expect((await world.a.session.post("/mcp", init("2024-11-05"))).status).toBe(401);
    const get = await fetch(`${world.server.url}/mcp`, { headers: { authorization: `Bearer ${world.a.keys.svc}` } });
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST"]);
  });
});

describe("outside clients agree", () => {
  test("the MCP Inspector CLI with a pasted key lists the tools, lists indexes and searches", async () => {
    const base = [
      inspectorCli,
      "--cli",
      `${world.server.url}/mcp`,
      "--transport",
      "http",
      "--header",
      `Authorization: Bearer ${world.a.keys.svc}`,
    ];
    const listed = await run(process.execPath, [...base, "--method", "tools/list"], { timeout: 60_000 });
    expect(
      JSON.parse(listed.stdout)
        .tools.map((t: { name: string }) => t.name)
        .sort(),
    ).toEqual(["listIndexes", "lookupById", "search"]);
    const indexes = await run(process.execPath, [...base, "--method", "tools/call", "--tool-name", "listIndexes"], {
      timeout: 60_000,
    });
    expect(parseText(JSON.parse(indexes.stdout)).indexes.map((i: { name: string }) => i.name)).toContain(index);
    const called = await run(
      process.execPath,
      [
        ...base,
        "--method",
        "tools/call",
        "--tool-name",
        "search",
        "--tool-arg",
        `indexName=${index}`,
        "--tool-arg",
        "phrase=spring",
        "--tool-arg",
        "typoTolerance=false",
      ],
      { timeout: 60_000 },
    );
    const result = JSON.parse(called.stdout);
    expect(result.isError).toBe(false);
    expect(parseText(result).results.map((r: { id: string }) => r.id)).toEqual(await restIds("spring"));
  });

  test("the stdio bin exposes the same tools with the same answers", async () => {
    const client = new Client({ name: "local-host", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [stdioBin, "--base-url", world.server.url, "--api-key", world.a.keys.srh],
        stderr: "pipe",
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(["listIndexes", "lookupById", "search"]);
      const listed = await client.callTool({ name: "listIndexes", arguments: {} });
      expect(listed.structuredContent).toEqual({ indexes: [expect.objectContaining({ name: index })] });
      const result = await client.callTool({ name: "search", arguments: { indexName: index, phrase: "spring" } });
      expect(parseText(result).results.map((r: { id: string }) => r.id)).toEqual(await restIds("spring"));
      // An srh key reaches PUBLIC indexes only.
      const priv = await client.callTool({
        name: "search",
        arguments: { indexName: world.a.privateIndex, phrase: "a" },
      });
      expect(priv.isError).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("the stdio bin explains a missing key", async () => {
    const failed = await run(process.execPath, [stdioBin, "--base-url", world.server.url]).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed).toMatchObject({ code: 2, stderr: expect.stringMatching(/usage: sift-mcp/) });
  });
});
