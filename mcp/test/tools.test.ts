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
        results: [{ id: "1", title: "Lyon" }],
      };
    },
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
    results: [{ id: "1", title: "Lyon" }],
  });
  expect(calls).toEqual([{ indexName: "cities", phrase: "ly", latitude: 45.75, longitude: 4.85 }]);
});

test("a refusal the caller can act on is shown as is; a server failure is not leaked", async () => {
  const client = await connect({
    search: async () => {
      throw Object.assign(new Error('index "nope" does not exist'), { status: 404 });
    },
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
