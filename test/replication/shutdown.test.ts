// A node stopped with SIGTERM (Ctrl-C, a rolling restart) while its NATS servers are stopping
// too or already gone, as `npm run regions` stops everything at once: it finishes its shutdown
// and exits 0, instead of dying on the log connection's rejected drain.
import { afterEach, describe, expect, it } from "vitest";
import { createTempDatabase } from "../../server/test/support/store.ts";
import { type NatsCluster, natsAvailable, startNatsCluster } from "../support/nats.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import { RATE_LIMITS_OFF } from "../support/limits.ts";

const available = natsAvailable && Boolean(process.env.DATABASE_URL);

describe.skipIf(!available)("a node shut down while NATS goes away", () => {
  let nats: NatsCluster | undefined;
  let node: SiftProcess | undefined;
  let dropDatabase: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await node?.destroy();
    await nats?.stop();
    await dropDatabase?.();
  });

  const start = async () => {
    nats = await startNatsCluster(1);
    const database = await createTempDatabase(process.env.DATABASE_URL!);
    dropDatabase = database.drop;
    node = await siftProcess(
      { ...RATE_LIMITS_OFF, SIFT_NATS_URL: nats.urls, SIFT_NATS_REPLICAS: "1", SIFT_REGION: "frankfurt" },
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
});
