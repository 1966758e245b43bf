// A change log that lost an index's entries some other way than Sift's own truncation (D-369): a
// second NATS server started on a live server's store directory once cost the log its oldest
// entries (D-367). Before, a node added afterwards never received such an index (503 "not received
// yet" while ready), and when the index's newest entry was lost too, every write to it was refused
// for ever. Now a node that holds the index repairs it from its copy: a snapshot, and an entry for
// the next write's compare-and-set to name; and an index no node holds any more comes back from
// the snapshot every index now gets within an hour of a write (D-375). Real processes: a NATS
// cluster of three, two regions, and a node added later with an empty data directory.
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { afterEach, describe, expect, it } from "vitest";
import { RATE_LIMITS_OFF } from "../support/limits.ts";
import { type SiftProcess, siftProcess } from "../support/process.ts";
import {
  keyed,
  logRegionsOnFailure,
  logSubjects,
  makeIndex,
  type Regions,
  regionsAvailable,
  useRegions,
} from "../support/regions.ts";

/** Where the snapshot the index's pointer names was taken (0: none), read from the object store. */
async function snapshotAt(r: Regions, subject: string): Promise<number> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    const docs = await new Objm(jetstream(nc)).open("SIFT_docs");
    const pointer = await docs.getBlob(`snapshots/${subject.split(".").at(-1)}/latest`);
    return pointer === null ? 0 : (JSON.parse(Buffer.from(pointer).toString("utf8")) as { seq: number }).seq;
  } finally {
    await nc.close();
  }
}

/** Removes an index's entries from the log behind Sift's back: all of them, or those before `keepFrom`. */
async function lose(r: Regions, subject: string, keepFrom?: number): Promise<void> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    await (await jetstreamManager(nc)).streams.purge("SIFT", {
      filter: subject,
      ...(keepFrom === undefined ? {} : { seq: keepFrom }),
    });
  } finally {
    await nc.close();
  }
}

/** The positions of the entries of `subject` the log holds. */
async function positionsOf(r: Regions, subject: string): Promise<number[]> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    const jsm = await jetstreamManager(nc);
    const found: number[] = [];
    for (let seq = 1; ; seq++) {
      const request = { seq, next_by_subj: subject } as unknown as { seq: number };
      // biome-ignore lint/plugin: NATS answers "no message found" past the subject's last entry.
      const message = await jsm.streams.getMessage("SIFT", request).catch(() => null);
      if (message === null) return found;
      found.push(message.seq);
      seq = message.seq;
    }
  } finally {
    await nc.close();
  }
}

/** Nodes started by a test, removed after it. */
const added: SiftProcess[] = [];
afterEach(async () => {
  for (const node of added.splice(0)) await node.destroy();
});

/** Another node of London, started now with nothing of its own. */
async function addNode(r: Regions, name: string, env: Record<string, string>): Promise<SiftProcess> {
  const node = await siftProcess(
    {
      ...RATE_LIMITS_OFF,
      SIFT_NATS_URL: r.nats.urls,
      SIFT_NATS_REPLICAS: "3",
      SIFT_REGION: "london",
      SIFT_NODE_ID: name,
      ...env,
    },
    { sharedDatabase: r.databaseUrl },
  );
  added.push(node);
  await node.start();
  return node;
}

async function writeSome(r: Regions, index: string, prefix: string, n: number) {
  const written = new Map<string, string>();
  let newest = "";
  for (let i = 0; i < n; i++) {
    const put = await r.http(i % 2).put(`/v1/indexes/${index}/records/${prefix}-${i}`, { title: `${prefix} ${i}` });
    expect(put.status, put.text).toBe(200);
    written.set(`${prefix}-${i}`, `${prefix} ${i}`);
    newest = put.body.indexVersion;
  }
  return { written, newest };
}

async function readsAll(node: SiftProcess, r: Regions, index: string, written: Map<string, string>, at: string) {
  const missing: string[] = [];
  for (const [id, title] of written) {
    const read = await keyed(node.url, r.key).get(`/v1/indexes/${index}/records/${id}?minVersion=${at}`);
    if (read.status !== 200 || read.body.title !== title) missing.push(`${id}: ${read.status} ${read.text}`);
  }
  return missing;
}

describe.skipIf(!regionsAvailable)("a change log that lost an index's entries", () => {
  // No periodic look during the tests: a node that lacks the index, or a write, finds the loss.
  const NO_LOOK = { SIFT_REPLICATION_HISTORY_CHECK_MS: "3600000" };
  const regions = useRegions(["frankfurt", "london"], { ...RATE_LIMITS_OFF, ...NO_LOOK });

  it("every entry of an index: a node added later asks for it and holds it all; writes go on", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 30);
    const { subject } = await makeIndex(r, "lamps");
    const { written, newest } = await writeSome(r, "lamps", "lamp", 4);
    expect((await r.http(1).get(`/v1/indexes/lamps/records/lamp-3?minVersion=${newest}`)).status).toBe(200);

    await lose(r, subject);
    expect((await logSubjects(r))[subject]).toBeUndefined();

    // A node added now lacks the index: a request for it tells the nodes that hold it, which
    // repair it (before D-369 it answered 503 "not applied yet" for good).
    const fresh = await addNode(r, "london-added", NO_LOOK);
    await expect.poll(() => readsAll(fresh, r, "lamps", written, newest), { timeout: 20_000 }).toEqual([]);
    expect(fresh.output()).toMatch(/restored an index from its snapshot/);
    expect(r.nodes.map((n) => n.output()).join("\n")).toMatch(/the change log lost entries of an index/);

    // And the index is written again, everywhere (before, every write was refused for good).
    const writes: number[] = [];
    let after = "";
    await expect
      .poll(
        async () => {
          const put = await r.http(1).put("/v1/indexes/lamps/records/after", { title: "After" });
          writes.push(put.status);
          if (put.status === 503) expect(put.headers.get("retry-after")).toBeTruthy();
          if (put.status === 200) after = put.body.indexVersion;
          return put.status;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(200);
    expect(writes.filter((s) => s !== 503 && s !== 200)).toEqual([]);
    written.set("after", "After");
    expect(await readsAll(fresh, r, "lamps", written, after)).toEqual([]);
  }, 120_000);

  it("its oldest entries, its creation among them: a node added later holds it all", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 30);
    const { subject } = await makeIndex(r, "desks");
    const { written, newest } = await writeSome(r, "desks", "desk", 5);
    expect((await r.http(1).get(`/v1/indexes/desks/records/desk-4?minVersion=${newest}`)).status).toBe(200);

    const held = await positionsOf(r, subject);
    await lose(r, subject, held.at(-2)); // the newest two stay
    expect(await positionsOf(r, subject)).toEqual(held.slice(-2));

    const fresh = await addNode(r, "london-later", NO_LOOK);
    await expect.poll(() => readsAll(fresh, r, "desks", written, newest), { timeout: 20_000 }).toEqual([]);
    // And the index goes on being written, and replicated to it.
    const next = await r.http(0).put("/v1/indexes/desks/records/next", { title: "Next" });
    expect(next.status, next.text).toBe(200);
    written.set("next", "Next");
    expect(await readsAll(fresh, r, "desks", written, next.body.indexVersion)).toEqual([]);
  }, 120_000);
});

describe.skipIf(!regionsAvailable)("a change log that lost a small index no node holds any more", () => {
  // Each node looks at its indexes every second (10 minutes by default), and snapshots one whose
  // oldest entry no snapshot holds is a second old (an hour by default, D-375).
  const LOOK = { SIFT_REPLICATION_HISTORY_CHECK_MS: "1000", SIFT_REPLICATION_SNAPSHOT_AFTER_MS: "1000" };
  const regions = useRegions(["frankfurt", "london"], { ...RATE_LIMITS_OFF, ...LOOK });

  it("comes back from the snapshot every index gets: a node added later holds it and writes it", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 30);
    const { subject } = await makeIndex(r, "shelves");
    const { written, newest } = await writeSome(r, "shelves", "shelf", 3);
    // Snapshotted with its newest entry: far below the 10,000 entries of a snapshot by count, the
    // only kind before.
    const newestAt = (await positionsOf(r, subject)).at(-1)!;
    await expect.poll(() => snapshotAt(r, subject), { timeout: 20_000, interval: 500 }).toBe(newestAt);

    // Every node that held it gone, and the log's last entry of it lost too.
    for (const node of r.nodes) await node.kill();
    await lose(r, subject);
    const fresh = await addNode(r, "london-alone", LOOK);
    await expect.poll(() => readsAll(fresh, r, "shelves", written, newest), { timeout: 20_000 }).toEqual([]);
    // Restored from the snapshot at its start when the snapshot's truncation reached past the
    // index's first entry (how far the nodes had said they applied, at that moment: seen in a
    // slow hour), else once the node finds the log holds none of its entries (D-375).
    expect(fresh.output()).toMatch(
      /the change log holds none of its entries|the log no longer held entries this node had not applied/,
    );
    let after = "";
    await expect
      .poll(
        async () => {
          const put = await keyed(fresh.url, r.key).put("/v1/indexes/shelves/records/after", { title: "After" });
          if (put.status === 200) after = put.body.indexVersion;
          return put.status;
        },
        { timeout: 20_000, interval: 500 },
      )
      .toBe(200);
    written.set("after", "After");
    expect(await readsAll(fresh, r, "shelves", written, after)).toEqual([]);
  }, 120_000);
});
