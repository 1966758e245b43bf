// No acknowledged version is lost when a process dies during an upload (issue 18, Done when):
// one NATS server is killed with SIGKILL while an upload's major is built and published, and a
// Sift node that is not ingesting is killed while the version is activated. An upload that says
// `succeeded` is then searchable, whole, in every region; the activation acknowledged is live
// everywhere; nothing answered 500.
import { describe, expect, it } from "vitest";
import { regionsAvailable, useRegions } from "../support/regions.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!regionsAvailable)("kill -9 during ingest and activate", () => {
  const regions = useRegions();

  it("an upload that succeeded, and a version activated, are in every region afterwards", async () => {
    const r = regions();
    const admin = r.http(0);
    const upload = async (rows: number, prefix: string) => {
      const started = await admin.post("/v1/uploads/start", { indexName: r.index });
      expect(started.status, started.text).toBe(200);
      const csv = ["id,title", ...Array.from({ length: rows }, (_, i) => `${prefix}-${i},${prefix} lamp ${i}`)];
      expect((await fetch(started.body.uploadUrl, { method: "PUT", body: csv.join("\n") })).status).toBe(200);
      const version = started.body.indexVersion as string;
      const completed = await admin.post("/v1/uploads/complete", { indexName: r.index, indexVersion: version });
      expect(completed.status, completed.text).toBe(200);
      return version;
    };
    const outcome = async (version: string) => {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
        const status = await admin.get(`/v1/uploads/${r.index}/${version}`);
        expect(status.status, status.text).not.toBe(500);
        if (status.body.state === "succeeded" || status.body.state === "failed") return status.body.state as string;
      }
      const said = r.nodes[0]!.output()
        .split("\n")
        .filter((l) => /"level":"(warn|error)"/.test(l));
      throw new Error(`upload ${version} never finished; the node that ingests it said:\n${said.join("\n")}`);
    };

    // A NATS server dies while the major is built and its files are published.
    const first = await upload(9_000, "first");
    await sleep(150);
    await r.nats.servers[1]!.kill();
    // With one of three servers down the log keeps its quorum: the upload goes through.
    const firstState = await outcome(first);
    expect(
      firstState,
      r.nodes[0]!.output()
        .split("\n")
        .filter((l) => /warn|error/.test(l))
        .join("\n")
        .slice(0, 4000),
    ).toBe("succeeded");
    await r.nats.servers[1]!.start();

    // A Sift node dies while a version is made live (an older version is activated again).
    const second = await upload(2_000, "second");
    expect(await outcome(second)).toBe("succeeded");
    const rollBack = admin.post(`/v1/indexes/${r.index}/versions/${first}/activate`, {});
    await r.nodes[2]!.kill("SIGKILL");
    const activated = await rollBack;
    // Another node dying does not concern the one that answers.
    expect(activated.status, activated.text).toBe(200);
    await r.nodes[2]!.start();

    // What was acknowledged holds in every region, node 2 included once it has caught up.
    const live = first;
    const expected = 9_000;
    for (const node of [0, 1, 2]) {
      await expect
        .poll(
          async () => {
            const found = await r
              .http(node)
              .get(`/v1/search?query=lamp&indexName=${r.index}&serviceName=${r.service}&minVersion=${live}`);
            return found.status === 200 ? [found.body.indexVersion, found.body.totalHits] : found.status;
          },
          { timeout: 60_000, interval: 200 },
        )
        .toEqual([live, expected]);
    }
  }, 240_000);
});
