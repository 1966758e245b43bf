// The tool layer alone, over the SDK's in-memory transport: what a model sees when Sift answers,
// refuses, or fails.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { expect, test } from "vitest";
import { createSiftMcpServer, type SiftMcpBackend } from "../src/index.ts";

async function connect(backend: SiftMcpBackend) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createSiftMcpServer(backend).connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  return client;
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

test("search passes coordinates as numbers and returns the documented JSON text", async () => {
  const calls: unknown[] = [];
  const client = await connect({
    search: async (input) => {
      calls.push(input);
      return {
        indexName: input.indexName,
        indexVersion: "3.1",
        phrase: input.phrase,
        totalHits: 12,
        totalHitsExact: true,
        results: [{ id: "1", title: "Lyon" }],
      };
    },
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const result = await client.callTool({
    name: "search",
    arguments: { indexName: "cities", phrase: "ly", latitude: "45.75", longitude: "4.85" },
  });
  expect(result.isError).toBe(false);
  expect(JSON.parse(text(result))).toEqual({
    indexName: "cities",
    indexVersion: "3.1",
    phrase: "ly",
    totalHits: 12,
    totalHitsExact: true,
    results: [{ id: "1", title: "Lyon" }],
  });
  expect(calls).toEqual([{ indexName: "cities", phrase: "ly", latitude: 45.75, longitude: 4.85 }]);
  // The same answer as structured content, for hosts that read the output schema.
  expect(result.structuredContent).toEqual(JSON.parse(text(result)));

  // Hosts that send numbers are served the same way; out of range is refused before the backend.
  await client.callTool({
    name: "search",
    arguments: { indexName: "cities", phrase: "ly", latitude: 45.75, longitude: 4.85 },
  });
  expect(calls.at(-1)).toEqual({ indexName: "cities", phrase: "ly", latitude: 45.75, longitude: 4.85 });
  const far = await client.callTool({
    name: "search",
    arguments: { indexName: "c", phrase: "ly", latitude: 91, longitude: 0 },
  });
  expect(far.isError).toBe(true);
  expect(text(far)).toMatch(/latitude must be between -90 and 90/);
  expect(calls).toHaveLength(2);
});

test("both tools declare an output schema that their answers satisfy", async () => {
  const client = await connect({
    search: async (input) => ({
      indexName: input.indexName,
      indexVersion: "1",
      phrase: input.phrase,
      totalHits: 1,
      totalHitsExact: true,
      results: [{ id: "1", title: "Lyon", data: { country: "FR" }, highlight: { title: [[0, 2]] } }],
    }),
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async (input) => ({
      indexName: input.indexName,
      indexVersion: "1",
      record: { id: input.id, title: "Lyon" },
    }),
  });
  const { tools } = await client.listTools();
  for (const tool of tools) {
    expect(tool.outputSchema?.type, tool.name).toBe("object");
  }
  const search = tools.find((t) => t.name === "search")!;
  expect(Object.keys(search.outputSchema!.properties!).sort()).toEqual([
    "indexName",
    "indexVersion",
    "phrase",
    "results",
    "totalHits",
    "totalHitsExact",
  ]);
  // The client validates structuredContent against the declared schema; a mismatch would throw.
  const found = await client.callTool({ name: "lookupById", arguments: { indexName: "cities", id: "1" } });
  expect(found.structuredContent).toEqual({
    indexName: "cities",
    indexVersion: "1",
    record: { id: "1", title: "Lyon" },
  });
  const searched = await client.callTool({ name: "search", arguments: { indexName: "cities", phrase: "ly" } });
  expect((searched.structuredContent as { results: unknown[] }).results).toHaveLength(1);
});

test("a refusal the caller can act on is shown as is; a server failure is not leaked", async () => {
  const client = await connect({
    search: async () => {
      throw Object.assign(new Error('index "nope" does not exist'), { status: 404 });
    },
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => {
      throw new Error("connection to the database lost at db.ts:42");
    },
  });
  const refused = await client.callTool({ name: "search", arguments: { indexName: "nope", phrase: "x" } });
  expect([refused.isError, text(refused)]).toEqual([true, 'index "nope" does not exist']);
  const failed = await client.callTool({ name: "lookupById", arguments: { indexName: "x", id: "1" } });
  expect(failed.isError).toBe(true);
  expect(text(failed)).not.toMatch(/database|db\.ts/);
});

test("typoTolerance is passed on as a boolean, given as one or as a string; anything else is refused", async () => {
  const calls: unknown[] = [];
  const client = await connect({
    search: async (input) => {
      calls.push(input);
      return {
        indexName: input.indexName,
        indexVersion: "1",
        phrase: input.phrase,
        totalHits: 1,
        totalHitsExact: true,
        results: [{ id: "1", title: "Lyon", highlight: { title: [[0, 3]] } }],
      };
    },
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const search = (extra: Record<string, unknown>) =>
    client.callTool({ name: "search", arguments: { indexName: "cities", phrase: "lyon", ...extra } });
  for (const value of [false, "false", true, "true"])
    expect((await search({ typoTolerance: value })).isError).toBe(false);
  expect((await search({})).isError).toBe(false);
  expect(calls.map((c) => (c as { typoTolerance?: boolean }).typoTolerance)).toEqual([
    false,
    false,
    true,
    true,
    undefined,
  ]);
  // The backend's highlight reaches the model as is.
  expect(JSON.parse(text(await search({}))).results[0].highlight).toEqual({ title: [[0, 3]] });

  const refused = await search({ typoTolerance: "maybe" });
  expect(refused.isError).toBe(true);
  expect(text(refused)).toMatch(/typoTolerance must be true or false/);
  expect(calls).toHaveLength(6);
});

test("the search tool documents typoTolerance and the highlight its results carry", async () => {
  const client = await connect({
    search: async () => Promise.reject(new Error("unused")),
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const { tools } = await client.listTools();
  const search = tools.find((t) => t.name === "search")!;
  expect(search.description).toMatch(/typoTolerance/);
  expect(search.description).toMatch(/highlight/);
  expect(search.inputSchema.required).not.toContain("typoTolerance");
  expect(JSON.stringify(search.inputSchema.properties!.typoTolerance)).toMatch(/boolean.*"true".*"false"/);
});

test("filter and limit reach the backend; a limit out of range or not a number is refused before it", async () => {
  const calls: { filter?: string; limit?: number }[] = [];
  const client = await connect({
    search: async (input) => {
      calls.push(input);
      return {
        indexName: input.indexName,
        indexVersion: "1",
        phrase: input.phrase,
        totalHits: 40,
        totalHitsExact: true,
        results: [],
      };
    },
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const search = (extra: Record<string, unknown>) =>
    client.callTool({ name: "search", arguments: { indexName: "shop", phrase: "shoe", ...extra } });
  const found = await search({ filter: 'data.brand = "Acme"', limit: 25 });
  expect(found.isError).toBe(false);
  expect(JSON.parse(text(found))).toMatchObject({ totalHits: 40, totalHitsExact: true });
  expect((await search({ limit: "3", filter: "  " })).isError).toBe(false);
  expect(calls.map((c) => [c.filter, c.limit])).toEqual([
    ['data.brand = "Acme"', 25],
    [undefined, 3],
  ]);
  for (const limit of [0, 101, 2.5, "ten"]) {
    const refused = await search({ limit });
    expect(refused.isError, String(limit)).toBe(true);
    expect(text(refused)).toMatch(/limit must be a whole number from 1 to 100/);
  }
  expect(calls).toHaveLength(2);
});

test("the search tool documents filter, limit and totalHits", async () => {
  const client = await connect({
    search: async () => Promise.reject(new Error("unused")),
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const search = (await client.listTools()).tools.find((t) => t.name === "search")!;
  expect(search.description).toMatch(/totalHits/);
  expect(Object.keys(search.inputSchema.properties!)).toEqual(expect.arrayContaining(["filter", "limit"]));
  expect(search.inputSchema.required).toEqual(["indexName", "phrase"]);
  expect(JSON.stringify(search.inputSchema.properties!.filter)).toMatch(/IN \[/);
});

test("listIndexes answers the backend's indexes as structured content matching its output schema", async () => {
  const indexes = [
    { name: "products", serviceName: "shop", visibility: "PUBLIC" as const, activeVersion: "3.2", records: 120 },
    { name: "staff", serviceName: "shop", visibility: "PRIVATE" as const, activeVersion: "1", records: 7 },
  ];
  const client = await connect({
    search: async () => Promise.reject(new Error("unused")),
    listIndexes: async () => ({ indexes }),
    lookupById: async () => undefined,
  });
  const listed = (await client.listTools()).tools.find((t) => t.name === "listIndexes")!;
  expect(listed.annotations).toMatchObject({ readOnlyHint: true });
  expect(listed.inputSchema.required ?? []).toEqual([]);
  // The client checks structuredContent against the declared outputSchema; a mismatch throws.
  const result = await client.callTool({ name: "listIndexes", arguments: {} });
  expect(result.isError).toBe(false);
  expect(result.structuredContent).toEqual({ indexes });
  expect(JSON.parse(text(result))).toEqual({ indexes });
});

test("weighted and version reach the backend; a version that is no version id is refused before it", async () => {
  const calls: { weighted?: boolean; version?: string }[] = [];
  const client = await connect({
    search: async (input) => {
      calls.push(input);
      return {
        indexName: input.indexName,
        indexVersion: input.version ?? "9",
        phrase: input.phrase,
        totalHits: 0,
        totalHitsExact: true,
        results: [],
      };
    },
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const search = (extra: Record<string, unknown>) =>
    client.callTool({ name: "search", arguments: { indexName: "shop", phrase: "shoe", ...extra } });
  for (const extra of [{ weighted: true, version: "7.3" }, { weighted: "false", version: 7 }, {}]) {
    expect((await search(extra)).isError, JSON.stringify(extra)).toBe(false);
  }
  expect(calls.map((c) => [c.weighted, c.version])).toEqual([
    [true, "7.3"],
    [false, "7"],
    [undefined, undefined],
  ]);
  for (const version of ["7.0", "latest", "07", -1]) {
    const refused = await search({ version });
    expect(refused.isError, String(version)).toBe(true);
    expect(text(refused)).toMatch(/version must be a version id such as "7" or "7.3"/);
  }
  const badWeight = await search({ weighted: "yes" });
  expect(text(badWeight)).toMatch(/weighted must be true or false/);
  expect(calls).toHaveLength(3);
});

test("no tool description or schema names an index: a new tenant's host would try it and fail", async () => {
  const client = await connect({
    search: async () => Promise.reject(new Error("unused")),
    listIndexes: async () => ({ indexes: [] }),
    lookupById: async () => undefined,
  });
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(["listIndexes", "lookupById", "search"]);
  // The demo tenant's `cities` once served as the example index name.
  expect(JSON.stringify(tools)).not.toMatch(/cities/);
  const search = tools.find((t) => t.name === "search")!;
  expect(JSON.stringify(search.inputSchema.properties!.indexName)).toMatch(/listIndexes/);
});

test("listIndexes lists the indexes kept only in other regions apart, with their MCP endpoints", async () => {
  const listed = {
    indexes: [{ name: "cities", serviceName: "geo", visibility: "PUBLIC" as const, activeVersion: "2", records: 9 }],
    elsewhere: [
      {
        name: "stock",
        serviceName: "shop",
        regions: [{ region: "frankfurt", mcpEndpoint: "https://fra.sift.example/mcp" }, { region: "tokyo" }],
      },
    ],
  };
  const client = await connect({
    search: async () => {
      throw new Error("not called");
    },
    listIndexes: async () => listed,
    lookupById: async () => undefined,
  });
  const listTool = (await client.listTools()).tools.find((t) => t.name === "listIndexes")!;
  expect(Object.keys(listTool.outputSchema!.properties!).sort()).toEqual(["elsewhere", "indexes"]);
  expect(listTool.description).toMatch(/elsewhere/);
  // The client validates structuredContent against the declared schema; a mismatch would throw.
  const result = await client.callTool({ name: "listIndexes", arguments: {} });
  expect(result.structuredContent).toEqual(listed);
  expect(JSON.parse(text(result))).toEqual(listed);
});
