// A node started or stopped while its NATS servers are out of reach. Stopped with SIGTERM (Ctrl-C,
// a rolling restart) while they stop too or are gone, as `npm run regions` stops everything at
// once: it finishes its shutdown and exits 0, instead of dying on the log connection's rejected
// drain (D-364). Started for the first time on a fresh database: it starts without the demo,
// whose index the log cannot take, and the next start loads it (D-365).
import { afterEach, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { type NatsCluster, natsAvailable, startNatsCluster } from "../support/nats.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { RATE_LIMITS_OFF } from "../support/limits.ts";

const available = natsAvailable && Boolean(process.env.DATABASE_URL);

describe.skipIf(!available)("a node started or shut down while NATS is out of reach", () => {
  let nats: NatsCluster | undefined;
  let node: SiftProcess | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await node?.destroy();
    await nats?.stop();
    await dropDatabase?.();
  });

  const start = async (env: Record<string, string> = {}) => {
    nats = await startNatsCluster(1);
    const database = await createTempDatabase(process.env.DATABASE_URL!);
    dropDatabase = database.drop;
    node = await siftProcess(
      { ...RATE_LIMITS_OFF, SIFT_NATS_URL: nats.urls, SIFT_NATS_REPLICAS: "1", SIFT_REGION: "frankfurt", ...env },
      { sharedDatabase: database.url },
    );
    await node.start();
    await expect.poll(async () => (await fetch(`${node!.url}/readyz`)).status, { timeout: 30_000 }).toBe(200);
    return node;
  };

  for (const when of ["at the same moment", "after they are gone"] as const) {
    it(`exits 0 when its NATS server stops ${when}`, async () => {
      const sift = await start();
      if (when === "after they are gone") await nats!.servers[0]!.kill("SIGKILL");
      const exited = sift.exited();
      const stopping = Date.now();
      await Promise.all([sift.kill("SIGTERM"), when === "at the same moment" ? nats!.servers[0]!.kill("SIGTERM") : 0]);
      expect(await exited, sift.output()).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(10_000);
      expect(sift.output()).not.toMatch(/RequestError|unhandled|grace period over/i);
    });
  }

  it("starts without the demo while NATS is out of reach; the next start loads it", async () => {
    nats = await startNatsCluster(1);
    const server = nats.servers[0]!;
    await server.kill("SIGKILL");
    const database = await createTempDatabase(process.env.DATABASE_URL!);
    dropDatabase = database.drop;
    node = await siftProcess(
      { SIFT_NATS_URL: nats.urls, SIFT_NATS_REPLICAS: "1", SIFT_REGION: "frankfurt", SIFT_DEMO: "true" },
      { sharedDatabase: database.url },
    );
    await node.start();
    const demoQuery = `${node.url}/v1/search?query=new%20yo&indexName=cities&serviceName=demo`;
    expect(node.output()).toContain("could not load the demo; the next start tries again");
    expect(node.output()).not.toContain("Try a search");
    // No PUBLIC index of that name: a search without a key is refused.
    expect((await fetch(demoQuery)).status).toBe(401);
    await node.kill("SIGTERM");
    await server.start();
    await node.start();
    const reply = await fetch(demoQuery);
    expect((await reply.json()).suggestions[0]).toMatchObject({ title: "New York City" });
  });
});
