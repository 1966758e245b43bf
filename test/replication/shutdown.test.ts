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

  /** A one-server NATS and a fresh database, and a node (not started) on both. */
  const prepare = async (env: Record<string, string>) => {
    nats = await startNatsCluster(1);
    const database = await createTempDatabase(process.env.DATABASE_URL!);
    dropDatabase = database.drop;
    node = await siftProcess(
      { ...RATE_LIMITS_OFF, SIFT_NATS_URL: nats.urls, SIFT_NATS_REPLICAS: "1", SIFT_REGION: "frankfurt", ...env },
      { sharedDatabase: database.url },
    );
    return { node, server: nats.servers[0]! };
  };

  for (const when of ["at the same moment", "after they are gone"] as const) {
    it(`exits 0 when its NATS server stops ${when}`, async () => {
      const { node: sift, server } = await prepare({});
      await sift.start();
      await expect.poll(async () => (await fetch(`${sift.url}/readyz`)).status, { timeout: 30_000 }).toBe(200);
      if (when === "after they are gone") await server.kill("SIGKILL");
      const exited = sift.exited();
      const stopping = Date.now();
      await Promise.all([sift.kill("SIGTERM"), when === "at the same moment" ? server.kill("SIGTERM") : 0]);
      expect(await exited, sift.output()).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(10_000);
      expect(sift.output()).not.toMatch(/RequestError|unhandled|grace period over/i);
    });
  }

  it("starts without the demo while NATS is out of reach; the next start loads it", async () => {
    const { node: sift, server } = await prepare({ SIFT_DEMO: "true" });
    await server.kill("SIGKILL");
    await sift.start();
    const demoQuery = `${sift.url}/v1/search?query=new%20yo&indexName=cities&serviceName=demo`;
    expect(sift.output()).toContain("could not load the demo; the next start tries again");
    expect(sift.output()).not.toContain("Try a search");
    // No PUBLIC index of that name: a search without a key is refused.
    expect((await fetch(demoQuery)).status).toBe(401);
    await sift.kill("SIGTERM");
    await server.start();
    await sift.start();
    const reply = await fetch(demoQuery);
    expect((await reply.json()).suggestions[0]).toMatchObject({ title: "New York City" });
  });
});
