// POST /mcp turns failures into tool results: a domain error (a missing index) keeps its text for
// the model, anything else becomes the generic message. The services are fakes: this is about
// what routes/mcp.ts hands the MCP tools, not about search.
import { Hono } from "hono";
import { describe, expect, test } from "vitest";
import type { Principal } from "../../src/auth/principal.ts";
import type { AppEnv } from "../../src/http/env.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import { mcpHandlers } from "../../src/routes/mcp.ts";
import type { CatalogService, IndexRef } from "../../src/services/catalog.ts";
import type { SearchService } from "../../src/services/search.ts";

const principal: Principal = { kind: "key", keyId: "key_1", tenantId: "ten_1", type: "svc", userId: null };
const ref: IndexRef = {
  id: "idx_1",
  tenantId: "ten_1",
  name: "food",
  serviceName: "shop",
  regions: ["eu"],
  visibility: "PRIVATE",
  activeVersion: "1",
  createdAt: 0,
};

function app(failure: Error): Hono<AppEnv> {
  const catalog = {
    byName: async (_tenant: string, name: string) => (name === "food" ? ref : undefined),
    servedHere: <T>(r: T) => r,
  } as unknown as CatalogService;
  const search = { searchIndex: () => Promise.reject(failure) } as unknown as SearchService;
  const engine = {} as SearchEngine;
  const handlers = mcpHandlers({ catalog, search, engine, maxBodyBytes: 64 * 1024 });
  const hono = new Hono<AppEnv>();
  hono.post("/mcp", (c) => {
    c.set("principal", principal);
    return handlers.Mcp_call!(c, { path: {}, query: {}, body: undefined } as never);
  });
  return hono;
}

async function callSearch(hono: Hono<AppEnv>, indexName: string): Promise<{ isError: boolean; text: string }> {
  const response = await hono.request("/mcp", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "search", arguments: { indexName, phrase: "piz" } },
    }),
  });
  const { result } = (await response.json()) as { result: { isError: boolean; content: { text: string }[] } };
  return { isError: result.isError, text: result.content[0]!.text };
}

describe("MCP tool failures", () => {
  test("a domain error keeps its message", async () => {
    expect(await callSearch(app(new Error("unused")), "nope")).toEqual({
      isError: true,
      text: 'index "nope" does not exist',
    });
  });

  test("an unexpected failure says only that Sift failed", async () => {
    expect(await callSearch(app(new Error("disk on fire")), "food")).toEqual({
      isError: true,
      text: "Sift failed to answer this call; try again shortly.",
    });
  });

  test("an index name no store can hold is refused with the reason, before any lookup", async () => {
    expect(await callSearch(app(new Error("unused")), "fo\u0000od")).toEqual({
      isError: true,
      text: "indexName: contains U+0000 (NUL) at offset 2",
    });
  });
});
