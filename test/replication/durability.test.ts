// No acknowledged write is lost (docs/replication.md): writers keep writing to all three regions
// while one NATS server and then one Sift node are killed with SIGKILL and started again.
// Afterwards every region holds every write that was acknowledged, with the content written.
import { describe, expect, it } from "vitest";
import { regionsAvailable, useRegions } from "../support/regions.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!regionsAvailable)("kill -9 during writes", () => {
  const regions = useRegions();

  it("loses no acknowledged write when a NATS server and a Sift node die mid-write", async () => {
    const r = regions();
    const acknowledged: { id: string; version: string; title: string }[] = [];
    const refused = new Map<string, number>();
    let writing = true;
    const writer = async (loop: number) => {
      for (let n = 0; writing; n++) {
        const node = loop % 3;
        const id = `w-${loop}-${n}`;
        const title = `Written by loop ${loop} number ${n}`;
        try {
          const reply = await r.http(node).put(`/v1/indexes/${r.index}/records/${id}`, { title });
          if (reply.status === 200) acknowledged.push({ id, version: reply.body.indexVersion, title });
          else {
            // Never a 500: a write the log could not confirm is a 503 the client may retry.
            expect([503], reply.text).toContain(reply.status);
            refused.set(`HTTP ${reply.status}`, (refused.get(`HTTP ${reply.status}`) ?? 0) + 1);
          }
        } catch (error) {
          // The killed node's connections: not acknowledged, so nothing is promised.
          refused.set((error as Error).message, (refused.get((error as Error).message) ?? 0) + 1);
          await sleep(100);
        }
      }
    };
    const loops = Array.from({ length: 6 }, (_, loop) => writer(loop));
    await sleep(1_500);
    await r.nats.servers[0]!.kill();
    await sleep(2_500);
    await r.nats.servers[0]!.start();
    await sleep(1_000);
    await r.nodes[2]!.kill("SIGKILL");
    await sleep(1_500);
    await r.nodes[2]!.start();
    await sleep(1_000);
    writing = false;
    await Promise.all(loops);

    expect(acknowledged.length).toBeGreaterThan(20);
    for (const node of [0, 1, 2]) {
      const missing: string[] = [];
      for (const w of acknowledged) {
        const read = await r.http(node).get(`/v1/indexes/${r.index}/records/${w.id}?minVersion=${w.version}`);
        if (read.status !== 200 || read.body.title !== w.title) missing.push(`${w.id}@${w.version}: ${read.status}`);
      }
      expect(missing, `region ${node} lacks acknowledged writes`).toEqual([]);
    }
  }, 120_000);
});
