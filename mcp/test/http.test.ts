// POST /mcp's HTTP handling apart from the tools: a JSON-RPC batch (an array) got a 200 with an
// array of answers, which the contract's JsonRpcResponse (one object) does not allow and MCP has
// not allowed since 2025-06-18 (issue 15, found by the contract fuzzer). It is a JSON-RPC error.
import { expect, test } from "vitest";
import { handleMcpHttp, type SiftMcpBackend } from "../src/index.ts";

const backend: SiftMcpBackend = {
  search: async (input) => ({
    indexName: input.indexName,
    indexVersion: "1",
    phrase: input.phrase,
    totalHits: 0,
    totalHitsExact: true,
    results: [],
  }),
  listIndexes: async () => ({ indexes: [] }),
  lookupById: async () => undefined,
};

const post = (body: string) =>
  handleMcpHttp(
    new Request("http://localhost/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body,
    }),
    backend,
  );

test("a JSON-RPC batch is 400 Invalid Request, one JSON-RPC error object", async () => {
  const batch = JSON.stringify([
    { jsonrpc: "2.0", id: 1, method: "tools/list" },
    { jsonrpc: "2.0", id: 2, method: "ping" },
  ]);
  const response = await post(batch);
  expect(response.status).toBe(400);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = await response.json();
  expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
  expect(body.error.message).toMatch(/batch/);
});

test("a single request is still answered", async () => {
  const response = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  expect(response.status).toBe(200);
  expect((await response.json()).result.tools.length).toBeGreaterThan(0);
});
