// Catch-up past a truncated log (docs/replication.md, Catch-up): every 10 entries of an index the
// node that wrote the tenth snapshots the index and removes its entries behind the snapshot and
// every live node's position. A region down longer than SIFT_REPLICATION_NODE_GONE_MS no longer
// holds that back; when it returns, the log no longer has what it missed, and it restores the
// index from the snapshot, then replays the rest: every acknowledged write is there afterwards.
// Truncation also removes what no snapshot or entry needs from the object store (a dropped
// major's files, older snapshots, the parts of an upload whose node died before it finished),
// and a region restored after that still has every write.
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { describe, expect, it } from "vitest";
import { listObjects } from "../../server/src/replication/nats/listing.ts";
import { RATE_LIMITS_OFF } from "../support/limits.ts";
import { streamState } from "../support/nats.ts";
import {
  logRegionsOnFailure,
  type Regions,
  regionsAvailable,
  startCaughtUp,
  uploadCsv,
  useRegions,
} from "../support/regions.ts";

/** The first and last positions the log still holds, as the NATS servers report them. */
const firstSeq = async (r: Regions) => (await streamState(r.nats, "SIFT"))!.state.first_seq;
const lastSeq = async (r: Regions) => (await streamState(r.nats, "SIFT"))!.state.last_seq;

/** The names in one of the change log's object store buckets (`files` or `docs`). */
async function objectNames(r: Regions, bucket: "files" | "docs"): Promise<string[]> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    // Not the object store's own list(): it can leave out an object rewritten meanwhile (D-311).
    return (await listObjects(await jetstreamManager(nc), `SIFT_${bucket}`, [""])).map((o) => o.name);
  } finally {
    await nc.close();
  }
}

async function putObject(r: Regions, name: string, text: string): Promise<void> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    const store = await new Objm(nc).open("SIFT_files");
    await store.putBlob({ name }, Buffer.from(text));
  } finally {
    await nc.close();
  }
}

describe.skipIf(!regionsAvailable)("a region that returns after the log was truncated", () => {
  const regions = useRegions(["frankfurt", "london", "newark"], {
    ...RATE_LIMITS_OFF,
    SIFT_REPLICATION_SNAPSHOT_EVERY: "10",
    SIFT_REPLICATION_NODE_GONE_MS: "1500",
    // The checkpoint below makes the bulk major droppable at once.
    SIFT_RETAIN_VERSIONS: "1",
    // And it is layered on the bulk major's segment (D-351): the region restores it from its
    // snapshot, which holds the base's files (D-353).
    SIFT_LAYERED_FROM: "100",
  });

  it("restores the index from the newest snapshot and has every acknowledged write", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 40);
    // A bulk major (published when built), then record changes on top of it.
    const csv = ["id,title", ...Array.from({ length: 500 }, (_, i) => `bulk-${i},Bulk lamp ${i}`)].join("\n");
    const indexVersion = await uploadCsv(r.http(0), r.index, csv);
    for (let i = 0; i < 3; i++) {
      expect((await r.http(1).put(`/v1/indexes/${r.index}/records/before-${i}`, { title: `Before ${i}` })).status).toBe(
        200,
      );
    }
    const down = r.nodes[2]!;
    await down.kill("SIGKILL");
    const heldAtKill = await lastSeq(r);
    // Long enough for the other regions to count it as gone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));

    const acknowledged = new Map<string, string>();
    let newest = "";
    for (let i = 0; i < 35; i++) {
      const put = await r.http(i % 2).put(`/v1/indexes/${r.index}/records/away-${i}`, { title: `Away lantern ${i}` });
      expect(put.status, put.text).toBe(200);
      acknowledged.set(`away-${i}`, `Away lantern ${i}`);
      newest = put.body.indexVersion;
    }
    // A truncation removes only what every live node had applied when it last reported (every
    // 500 ms here), and the writes above can all come before a report: the snapshots after the
    // checkpoint below, made after one, truncate past what the region missed.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    // A checkpoint while it is away: its major is published by the next snapshot.
    const coalesced = await r.http(0).post(`/v1/indexes/${r.index}/coalesce`, {});
    expect(coalesced.status, coalesced.text).toBe(200);
    const checkpoint: string = coalesced.body.indexVersion;
    for (let i = 0; i < 12; i++) {
      const put = await r.http(0).put(`/v1/indexes/${r.index}/records/after-${i}`, { title: `After checkpoint ${i}` });
      expect(put.status, put.text).toBe(200);
      acknowledged.set(`after-${i}`, `After checkpoint ${i}`);
      newest = put.body.indexVersion;
    }
    const deleted = await r.http(1).delete(`/v1/indexes/${r.index}/records/bulk-7`);
    expect(deleted.status, deleted.text).toBe(200);
    newest = deleted.body.indexVersion;

    // The log no longer holds what the region missed.
    await expect.poll(() => firstSeq(r), { timeout: 20_000 }).toBeGreaterThan(heldAtKill + 1);

    // It answers at once and says it is catching up until it has restored and replayed.
    await startCaughtUp(down);
    expect(down.output()).toMatch(/restored an index from its snapshot/);
    const back = r.http(2);
    const missing: string[] = [];
    for (const [id, title] of acknowledged) {
      const read = await back.get(`/v1/indexes/${r.index}/records/${id}?minVersion=${newest}`);
      if (read.status !== 200 || read.body.title !== title) missing.push(`${id}: ${read.status}`);
    }
    expect(missing).toEqual([]);
    expect((await back.get(`/v1/indexes/${r.index}/records/bulk-7?minVersion=${newest}`)).status).toBe(404);
    expect((await back.get(`/v1/indexes/${r.index}/records/before-2`)).body.title).toBe("Before 2");
    // The same index in both regions: record count and versions.
    const count = async (node: number) => (await r.http(node).get(`/v1/indexes/${r.index}`)).body.records;
    expect(await count(2)).toBe(await count(0));
    const versions = async (node: number) =>
      (await r.http(node).get(`/v1/indexes/${r.index}/versions`)).body.versions.map(
        (v: { version: string }) => v.version,
      );
    expect(await versions(2)).toEqual(await versions(0));
    // And it goes on replicating like the others.
    const later = await r.http(0).put(`/v1/indexes/${r.index}/records/later`, { title: "Later" });
    const read = await back.get(`/v1/indexes/${r.index}/records/later?minVersion=${later.body.indexVersion}`);
    expect(read.status, read.text).toBe(200);
    acknowledged.set("later", "Later");

    // The bulk major was dropped by the checkpoint's retention: once two snapshots without it are
    // out and the log is truncated past the first, its files leave the object store, and so do
    // the snapshots before those two.
    const bulkFiles = (names: string[]) => names.filter((n) => new RegExp(`^segments/[^/]+/${indexVersion}/`).test(n));
    expect(bulkFiles(await objectNames(r, "files")).length).toBeGreaterThan(0);
    // The parts of an upload whose node died before it wrote the manifest: no entry names them.
    const indexKey = (await objectNames(r, "docs")).find((n) => /^snapshots\/[^/]+\/latest$/.test(n))!.split("/")[1]!;
    // The checkpoint the region restored was layered. Its own files went without its base's,
    // which the nodes following the log link from their copy; its snapshot's went whole, base
    // included, for a node that restores (D-353).
    const files = await objectNames(r, "files");
    expect(files).toContain(`segments/${indexKey}/${checkpoint}/base-hidden.bin.part-0`);
    expect(files).not.toContain(`segments/${indexKey}/${checkpoint}/base-index.bin.part-0`);
    expect(
      files.filter(
        (n) => n.startsWith(`snapshots/${indexKey}/`) && n.includes(`/majors/${checkpoint}/base-index.bin.part-`),
      ),
    ).not.toEqual([]);
    const orphan = `segments/${indexKey}/9999/records.bin.part-0`;
    await putObject(r, orphan, "half an upload");
    expect(await objectNames(r, "files")).toContain(orphan);
    const snapshotDocs = async () => (await objectNames(r, "docs")).filter((n) => n.endsWith("/snapshot"));
    const oldSnapshots = await snapshotDocs();
    expect(oldSnapshots.length).toBeGreaterThan(0);
    // Live nodes report where they are every half second here, and truncation and clean-up wait
    // for them: writes go on, spaced, until each step is seen.
    let n = 0;
    const writeUntil = async (done: () => Promise<boolean>, what: string, regions: number[]) => {
      const deadline = Date.now() + 30_000;
      while (!(await done())) {
        expect(Date.now(), what).toBeLessThan(deadline);
        const i = n++;
        const put = await r.http(regions[i % regions.length]!).put(`/v1/indexes/${r.index}/records/late-${i}`, {
          title: `Late ${i}`,
        });
        expect(put.status, put.text).toBe(200);
        acknowledged.set(`late-${i}`, `Late ${i}`);
        newest = put.body.indexVersion;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await writeUntil(
      async () => bulkFiles(await objectNames(r, "files")).length === 0,
      "the dropped major's files stayed in the object store",
      [0, 1, 2],
    );
    await writeUntil(
      async () => !(await objectNames(r, "files")).includes(orphan),
      "the parts of an unfinished upload stayed in the object store",
      [0, 1, 2],
    );
    await writeUntil(
      async () => !(await snapshotDocs()).some((name) => oldSnapshots.includes(name)),
      "older snapshots stayed in the object store",
      [0, 1, 2],
    );

    // A region that returns after that restores from what is left, and has every write.
    const again = r.nodes[1]!;
    await again.kill("SIGKILL");
    const heldAtSecondKill = await lastSeq(r);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await writeUntil(
      async () => (await firstSeq(r)) > heldAtSecondKill + 1,
      "the log was never truncated past the killed region",
      [0, 2],
    );
    await again.start();
    const returned = r.http(1);
    const lost: string[] = [];
    for (const [id, title] of acknowledged) {
      const read = await returned.get(`/v1/indexes/${r.index}/records/${id}?minVersion=${newest}`);
      if (read.status !== 200 || read.body.title !== title) lost.push(`${id}: ${read.status}`);
    }
    expect(lost).toEqual([]);
    expect(again.output()).toMatch(/restored an index from its snapshot/);
    expect(await count(1)).toBe(await count(0));

    // Dropping the index clears it from the object store once every region has applied the drop,
    // the parts of an unfinished upload with it.
    const indexId = indexKey;
    await putObject(r, `segments/${indexId}/9998/records.bin.part-0`, "another half");
    const dropped = await r.http(0).delete(`/v1/indexes/${r.index}`);
    expect(dropped.status, dropped.text).toBeLessThan(300);
    const ofIndex = (names: string[]) => names.filter((n) => n.includes(`/${indexId}/`));
    await expect
      .poll(async () => [...ofIndex(await objectNames(r, "files")), ...ofIndex(await objectNames(r, "docs"))], {
        timeout: 20_000,
      })
      .toEqual([]);
    for (const node of [0, 1, 2]) {
      const gone = await r.http(node).get(`/v1/indexes/${r.index}`);
      expect(gone.status, `${r.regionIds[node]}: ${gone.text}`).toBe(404);
    }
  }, 180_000);
});
