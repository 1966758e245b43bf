// A purge with replication (D-277): the engines of every region erase the record (D-162), and its
// other copies leave the change log and the object store within seconds: the log entry that
// wrote it, the snapshot document that held it, and the published files of the upload that held
// it. Before, they stayed until two snapshots later, which a quiet index may never reach. A region
// that returns after that restores from what is left, and has every other write.
import { zstdDecompressSync } from "node:zlib";
import { jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { connect } from "@nats-io/transport-node";
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

/** Words only the purged records hold, as they are written (titles keep their case on disk). */
const MARKERS = ["Zqxjbulk", "Zqxjminor"];

/**
 * Where the markers still are: every message the change log's stream holds, and every object of
 * its two object store buckets (segment parts decompressed).
 */
async function copiesOf(r: Regions, markers = MARKERS, where: "log" | "everywhere" = "everywhere"): Promise<string[]> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  const found: string[] = [];
  const look = (bytes: Uint8Array, where: string) => {
    const text = Buffer.from(bytes).toString("latin1");
    for (const marker of markers) if (text.includes(marker)) found.push(`${marker} in ${where}`);
  };
  try {
    const jsm = await jetstreamManager(nc);
    const { first_seq, last_seq } = (await streamState(r.nats, "SIFT"))!.state;
    for (let seq = first_seq; seq <= last_seq; seq++) {
      // biome-ignore lint/plugin: a position removed from the stream holds nothing to look at.
      const message = await jsm.streams.getMessage("SIFT", { seq }).catch(() => null);
      if (message) look(message.data, `log entry ${seq}`);
    }
    if (where === "log") return found;
    for (const bucket of ["SIFT_files", "SIFT_docs"]) {
      const store = await new Objm(nc).open(bucket);
      // Not the object store's own list(): it can leave out an object rewritten meanwhile (D-311).
      for (const info of await listObjects(jsm, bucket, [""])) {
        // An object deleted while it is read leaves the reader waiting for chunks that are gone:
        // it is not a copy that stays, and the next look lists what is left.
        const data = await Promise.race([
          store.getBlob(info.name),
          new Promise<null>((resolve) => setTimeout(() => resolve(null), 3_000).unref()),
        ]);
        if (data === null) continue;
        look(data, info.name);
        // biome-ignore lint/plugin: an object that is not zstd (a document, a log entry) was read as it is.
        try {
          look(zstdDecompressSync(data), info.name);
        } catch {}
      }
    }
  } finally {
    await nc.close();
  }
  return found;
}

describe.skipIf(!regionsAvailable)("a purge with replication", () => {
  const regions = useRegions(["frankfurt", "london"], {
    ...RATE_LIMITS_OFF,
    SIFT_REPLICATION_SNAPSHOT_EVERY: "5",
    SIFT_REPLICATION_NODE_GONE_MS: "1500",
  });

  it("removes the record from the log and the object store, and a region restored later has the rest", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 40);
    const acknowledged = new Map<string, string>();
    // The record in an upload's published files...
    const rows = Array.from({ length: 50 }, (_, i) => `bulk-${i},Bulk lamp ${i}`);
    await uploadCsv(r.http(0), r.index, ["id,title", ...rows, "secret-bulk,Zqxjbulk lamp"].join("\n"));
    for (let i = 0; i < 50; i++) acknowledged.set(`bulk-${i}`, `Bulk lamp ${i}`);
    // ...and in a log entry, then in a snapshot of the index (one every 5 entries here).
    const written = await r.http(1).put(`/v1/indexes/${r.index}/records/secret-minor`, { title: "Zqxjminor lamp" });
    expect(written.status, written.text).toBe(200);
    // Looked for at once: the writes below make a snapshot, after which the log may be cut past
    // the entry at any moment (the purge must still remove it when it is there, D-297's addendum).
    expect(await copiesOf(r, ["Zqxjminor"], "log")).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Zqxjminor in log entry/)]),
    );
    for (let i = 0; i < 6; i++) {
      const put = await r.http(i % 2).put(`/v1/indexes/${r.index}/records/before-${i}`, { title: `Before ${i}` });
      expect(put.status, put.text).toBe(200);
      acknowledged.set(`before-${i}`, `Before ${i}`);
    }
    // Where the test looks is where the copies are: the upload's files and a snapshot hold them.
    await expect
      .poll(
        async () => {
          const copies = await copiesOf(r);
          return [
            copies.some((where) => /Zqxjbulk in segments\//.test(where)),
            copies.some((where) => /Zqxjminor in snapshots\/.*\/snapshot$/.test(where)),
          ];
        },
        { timeout: 20_000 },
      )
      .toEqual([true, true]);

    let newest = "";
    for (const id of ["secret-bulk", "secret-minor"]) {
      const purged = await r.http(0).post(`/v1/indexes/${r.index}/records/${id}/purge`);
      expect(purged.status, purged.text).toBe(200);
      newest = purged.body.indexVersion;
    }
    for (const node of [0, 1]) {
      for (const id of ["secret-bulk", "secret-minor"]) {
        expect((await r.http(node).get(`/v1/indexes/${r.index}/records/${id}?minVersion=${newest}`)).status).toBe(404);
      }
    }
    // The log's append timeout (10 s), then the nodes' next position reports (every 500 ms here).
    await expect.poll(() => copiesOf(r), { timeout: 45_000, interval: 1_000 }).toEqual([]);

    // Both regions serve everything else, and a region restored from what is left has it too.
    const down = r.nodes[1]!;
    await down.kill("SIGKILL");
    const heldAtKill = (await streamState(r.nats, "SIFT"))!.state.last_seq;
    // Long enough to count as gone; then writes until the log is cut past what it holds.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (let i = 0; ; i++) {
      const put = await r.http(0).put(`/v1/indexes/${r.index}/records/away-${i}`, { title: `Away ${i}` });
      expect(put.status, put.text).toBe(200);
      acknowledged.set(`away-${i}`, `Away ${i}`);
      newest = put.body.indexVersion;
      if ((await streamState(r.nats, "SIFT"))!.state.first_seq > heldAtKill + 1) break;
      expect(i, "the log was never truncated past the killed region").toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await startCaughtUp(down);
    expect(down.output()).toMatch(/restored an index from its snapshot/);
    const missing: string[] = [];
    for (const [id, title] of acknowledged) {
      const read = await r.http(1).get(`/v1/indexes/${r.index}/records/${id}?minVersion=${newest}`);
      if (read.status !== 200 || read.body.title !== title) missing.push(`${id}: ${read.status}`);
    }
    expect(missing).toEqual([]);
    for (const id of ["secret-bulk", "secret-minor"]) {
      expect((await r.http(1).get(`/v1/indexes/${r.index}/records/${id}`)).status).toBe(404);
    }
    const search = (query: string) =>
      r.http(1).get(`/v1/search?query=${query}&indexName=${r.index}&serviceName=${r.service}&minVersion=${newest}`);
    const zqxj = await search("zqxjbulk");
    expect(zqxj.status, zqxj.text).toBe(200);
    expect(zqxj.body.suggestions).toEqual([]);
    expect((await search("lamp")).body.suggestions.length).toBeGreaterThan(0);
  }, 180_000);
});

describe.skipIf(!regionsAvailable)("a purge whose writer is killed before it removed the copies", () => {
  const regions = useRegions(["frankfurt", "london"], { ...RATE_LIMITS_OFF, SIFT_REPLICATION_NODE_GONE_MS: "3000" });

  it("is carried on by that node once it is back", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 40);
    const written = await r.http(0).put(`/v1/indexes/${r.index}/records/again`, { title: "Zqxjagain lamp" });
    expect(written.status, written.text).toBe(200);
    const kept = await r.http(0).put(`/v1/indexes/${r.index}/records/kept`, { title: "Kept lamp" });
    expect((await copiesOf(r, ["Zqxjagain"])).length).toBeGreaterThan(0);
    const purged = await r.http(0).post(`/v1/indexes/${r.index}/records/again/purge`);
    expect(purged.status, purged.text).toBe(200);
    // Killed once its state is saved past the purge (every 0.5 s), so that a restart does not
    // apply the purge again, and before its removal starts (it waits 10 s, the append timeout).
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const writer = r.nodes[0]!;
    await writer.kill("SIGKILL");
    await startCaughtUp(writer);
    await expect.poll(() => copiesOf(r, ["Zqxjagain"]), { timeout: 45_000, interval: 1_000 }).toEqual([]);
    for (const node of [0, 1]) {
      const read = (id: string) =>
        r.http(node).get(`/v1/indexes/${r.index}/records/${id}?minVersion=${purged.body.indexVersion}`);
      expect((await read("again")).status).toBe(404);
      expect((await read("kept")).body.title).toBe("Kept lamp");
    }
    expect(kept.status).toBe(200);
  }, 120_000);
});

describe.skipIf(!regionsAvailable)("a purge whose writer is killed and never comes back", () => {
  const regions = useRegions(["frankfurt", "london"], { ...RATE_LIMITS_OFF, SIFT_REPLICATION_NODE_GONE_MS: "3000" });

  it("has its copies removed by another node once the writer counts as gone (D-298)", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 40);
    // The record in an upload's published files, which only the clean-up removes, and in a log
    // entry.
    await uploadCsv(r.http(0), r.index, ["id,title", "orphan,Zqxjorphan lamp", "kept,Kept lamp"].join("\n"));
    const written = await r.http(0).put(`/v1/indexes/${r.index}/records/orphan`, { title: "Zqxjorphan lamp again" });
    expect(written.status, written.text).toBe(200);
    const before = await copiesOf(r, ["Zqxjorphan"]);
    expect(before.some((where) => /in segments\//.test(where))).toBe(true);
    expect(before.some((where) => /in log entry/.test(where))).toBe(true);
    const purged = await r.http(0).post(`/v1/indexes/${r.index}/records/orphan/purge`);
    expect(purged.status, purged.text).toBe(200);
    // Killed before its removal starts (it waits 10 s, the append timeout), and left down.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await r.nodes[0]!.kill("SIGKILL");
    // London counts it as gone 3 s after its last report, takes a snapshot of its own, and
    // removes the copies 10 s after that. It used to leave them until two snapshots later.
    await expect.poll(() => copiesOf(r, ["Zqxjorphan"]), { timeout: 45_000, interval: 1_000 }).toEqual([]);
    expect(r.nodes[1]!.output()).toMatch(/removing the copies of a purged record for its writer, which is gone/);
    const read = (id: string) =>
      r.http(1).get(`/v1/indexes/${r.index}/records/${id}?minVersion=${purged.body.indexVersion}`);
    expect((await read("orphan")).status).toBe(404);
    expect((await read("kept")).body.title).toBe("Kept lamp");
    // Writes go on in London after the cut.
    const after = await r.http(1).put(`/v1/indexes/${r.index}/records/after`, { title: "After lamp" });
    expect(after.status, after.text).toBe(200);
  }, 120_000);
});
