// The engine conformance suite against a real Typesense. It runs only when TYPESENSE_URL and
// TYPESENSE_API_KEY name a server (none can run on the development machines); otherwise the
// suite is reported as skipped. Each engine gets its own collection prefix, and cleanup
// removes every collection and alias under it, so runs can share a cluster.
import { randomUUID } from "node:crypto";
import { Client } from "typesense";
import { describe } from "vitest";
import { createTypesenseEngine } from "../../src/engine/typesense/index.ts";
import { describeEngineConformance } from "./conformance.ts";

const url = process.env.TYPESENSE_URL;
const apiKey = process.env.TYPESENSE_API_KEY;

async function removeEverythingUnder(prefix: string, client: Client): Promise<void> {
  const { aliases } = await client.aliases().retrieve();
  for (const alias of aliases) if (alias.name.startsWith(prefix)) await client.aliases(alias.name).delete();
  for (const collection of await client.collections().retrieve()) {
    if (collection.name.startsWith(prefix)) await client.collections(collection.name).delete();
  }
}

describe.skipIf(!url || !apiKey)("typesense engine against TYPESENSE_URL", () => {
  describeEngineConformance("typesense", async () => {
    const prefix = `sift_test_${randomUUID().slice(0, 8)}_`;
    const engine = createTypesenseEngine({ url: url!, apiKey: apiKey!, collectionPrefix: prefix });
    await engine.open();
    return {
      engine,
      cleanup: async () => {
        await engine.close();
        await removeEverythingUnder(
          prefix,
          new Client({ nodes: [{ url: url! }], apiKey: apiKey!, logLevel: "silent" }),
        );
      },
    };
  });
});
