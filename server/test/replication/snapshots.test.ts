// Snapshots (docs/replication.md, Catch-up). A snapshot reuses the files a major was published
// with, unless a purge came after them: those still hold the erased record. A truncation removes
// from the object store the files of majors neither the new snapshot nor the one before it holds,
// and older snapshots, once the log no longer holds the entries up to the one before. Files
// published lately stay (an upload's entry may still come), and nothing goes while a live node lags.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, test } from "vitest";
import { createLogger } from "../../src/log.ts";
import type { SearchEngine } from "../../src/ports/engine.ts";
import type { IndexReplica } from "../../src/replication/replica-state.ts";
import { type SnapshotManifest, Snapshots } from "../../src/replication/snapshots.ts";
import { MemoryLog } from "./memory-log.ts";

const GONE_MS = 10_000;
const INDEX = "idx_gc";
const silent = createLogger("silent", {}, () => {});

let memory: MemoryLog;
let snapshots: Snapshots;
const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sift-gc-")), "postings");
fs.writeFileSync(file, "segment bytes");

/** Files published under `name`, `ageMs` ago. */
async function publish(name: string, ageMs: number) {
  await memory.client().putFiles(name, [{ name: "postings", path: file }]);
  memory.publishedAt.set(name, Date.now() - ageMs);
}

function manifest(seq: number, files: string[], at = Date.now()): SnapshotManifest {
  return {
    index: INDEX,
    seq,
    at,
    node: "a",
    replica: {} as SnapshotManifest["replica"],
    majors: files.map((f, i) => ({ major: i + 1, parent: null, records: 1, files: f })),
    changes: [],
  };
}

/** A snapshot taken and truncated behind, as Snapshots.publish and truncate leave it. */
async function snapshot(m: SnapshotManifest) {
  await memory.client().putDoc(`snapshots/${INDEX}/${m.seq}/snapshot`, m);
  return snapshots.truncate(INDEX, m);
}

const reportAt = (node: string, position: number) =>
  memory.client().putDoc(`nodes/${node}`, { node, position, at: Date.now() });

beforeEach(() => {
  memory = new MemoryLog();
  snapshots = new Snapshots({
    log: memory.client(),
    engine: {} as SearchEngine,
    logger: silent,
    node: "a",
    every: 10,
    goneAfterMs: GONE_MS,
  });
});

describe("a truncation's clean-up of the object store", () => {
  test("removes dropped majors and old snapshots, keeps what either snapshot or a late upload needs", async () => {
    const hour = 3_600_000;
    await publish(`segments/${INDEX}/1`, 2 * hour); // dropped before the previous snapshot
    await publish(`segments/${INDEX}/2`, 2 * hour); // held by the previous snapshot only
    await publish(`snapshots/${INDEX}/10/majors/3`, 2 * hour); // a checkpoint both hold
    await publish(`snapshots/${INDEX}/5/majors/9`, 2 * hour); // published by a snapshot long gone
    await reportAt("b", 100);

    await snapshot(manifest(5, [`segments/${INDEX}/1`], Date.now() - 3 * hour));
    await snapshot(manifest(10, [`segments/${INDEX}/2`, `snapshots/${INDEX}/10/majors/3`], Date.now() - hour));
    // Published after the previous snapshot, its entry not in the log yet: not in any snapshot.
    await publish(`segments/${INDEX}/4`, 0);
    await snapshot(manifest(30, [`snapshots/${INDEX}/10/majors/3`]));

    expect([...memory.files.keys()].sort()).toEqual([
      `segments/${INDEX}/2`,
      `segments/${INDEX}/4`,
      `snapshots/${INDEX}/10/majors/3`,
    ]);
    expect([...memory.docs.keys()].filter((n) => n.startsWith("snapshots/")).sort()).toEqual([
      `snapshots/${INDEX}/10/snapshot`,
      `snapshots/${INDEX}/30/snapshot`,
      `snapshots/${INDEX}/latest`,
    ]);
    expect(await snapshots.pointer(INDEX)).toMatchObject({
      manifest: `snapshots/${INDEX}/30/snapshot`,
      previous: { manifest: `snapshots/${INDEX}/10/snapshot`, seq: 10 },
    });
  });

  test("removes nothing while a live node has not passed the previous snapshot", async () => {
    await publish(`segments/${INDEX}/1`, 3_600_000);
    await reportAt("b", 4); // it still replays entries before the previous snapshot (5)
    await snapshot(manifest(5, [], Date.now() - 60_000));
    await snapshot(manifest(30, []));
    expect([...memory.files.keys()]).toEqual([`segments/${INDEX}/1`]);

    await reportAt("b", 30);
    await snapshot(manifest(40, []));
    expect([...memory.files.keys()]).toEqual([]);
  });
});

describe("a snapshot finished after a newer one", () => {
  test("goes with the files it published itself; the newer one stays pointed to", async () => {
    await reportAt("b", 100);
    await publish(`segments/${INDEX}/1`, 0); // an upload's files: the late snapshot only reuses them
    await publish(`snapshots/${INDEX}/8/majors/2`, 0); // a checkpoint the late snapshot published
    await snapshot(manifest(20, [`segments/${INDEX}/1`]));

    // Taken at 8 before the snapshot at 20, written after it (a purge's clean-up, D-277, ran
    // meanwhile and could not see it).
    await snapshot(manifest(8, [`segments/${INDEX}/1`, `snapshots/${INDEX}/8/majors/2`]));

    expect([...memory.docs.keys()].filter((n) => n.startsWith("snapshots/")).sort()).toEqual([
      `snapshots/${INDEX}/20/snapshot`,
      `snapshots/${INDEX}/latest`,
    ]);
    expect([...memory.files.keys()]).toEqual([`segments/${INDEX}/1`]);
    expect(await snapshots.pointer(INDEX)).toMatchObject({ manifest: `snapshots/${INDEX}/20/snapshot`, seq: 20 });
  });
});

describe("two truncations at once", () => {
  test("the pointer ends at the newer snapshot, whichever wrote it last", async () => {
    await reportAt("b", 100);
    const older = manifest(8, [`segments/${INDEX}/1`]);
    const newer = manifest(20, [`segments/${INDEX}/1`]);
    await memory.client().putDoc(`snapshots/${INDEX}/8/snapshot`, older);
    await memory.client().putDoc(`snapshots/${INDEX}/20/snapshot`, newer);
    // Both read the pointer before either writes it; the older one writes last.
    await Promise.all([snapshots.truncate(INDEX, newer), snapshots.truncate(INDEX, older)]);

    expect(await snapshots.pointer(INDEX)).toMatchObject({ manifest: `snapshots/${INDEX}/20/snapshot`, seq: 20 });
    // It says no less than the newer truncation may have cut: a node behind it restores.
    expect((await snapshots.pointer(INDEX))!.truncatedBefore).toBeGreaterThanOrEqual(20);
  });
});

/** A snapshot captured and published at once, as the replica does around the index's chain. */
const take = async (from: Snapshots, replica: IndexReplica) => from.publish(await from.capture(INDEX, replica));

describe("a snapshot's majors", () => {
  // One major, as the engine holds it now.
  const engine = {
    versions: async () => [{ version: "1", parent: null, records: 2 }],
    holdSegmentFiles: async () => ({ files: [{ name: "postings", path: file }], release: async () => {} }),
    changes: async () => [],
  } as unknown as SearchEngine;
  const replica = (last: number, purgedAt?: number): IndexReplica => ({
    last,
    active: "1",
    majors: [1],
    maxMinor: {},
    appendedAt: 0,
    ...(purgedAt === undefined ? {} : { purgedAt }),
  });

  test("reuse the files published with the major until a purge, then are published again", async () => {
    const taking = new Snapshots({
      log: memory.client(),
      engine,
      logger: silent,
      node: "a",
      every: 10,
      goneAfterMs: 1,
    });
    await publish(`segments/${INDEX}/1`, 60_000);
    const first = await take(taking, replica(10));
    expect(first.majors[0]).toMatchObject({ files: `segments/${INDEX}/1`, publishedAt: 0 });
    await taking.truncate(INDEX, first);

    const purged = await take(taking, replica(20, 15));
    expect(purged.majors[0]).toMatchObject({ files: `snapshots/${INDEX}/20/majors/1`, publishedAt: 20 });
    await taking.truncate(INDEX, purged);

    const later = await take(taking, replica(30, 15));
    expect(later.majors[0]).toMatchObject({ files: `snapshots/${INDEX}/20/majors/1`, publishedAt: 20 });
    await taking.truncate(INDEX, later);
    // The files from before the purge went once neither snapshot named them.
    expect([...memory.files.keys()]).toEqual([`snapshots/${INDEX}/20/majors/1`]);
  });
});

describe("after a purge (D-277)", () => {
  /** The index's entries up to `seq` in the log, and the purge's snapshot at `seq` with major 1 republished. */
  async function purgeSnapshot(seq: number) {
    const log = memory.client();
    for (let i = 0; i < seq; i++) await log.append({ op: "create", index: INDEX, node: "a", at: i }, undefined);
    await publish(`segments/${INDEX}/1`, 3_600_000); // the upload that held the record
    await publish(`snapshots/${INDEX}/5/majors/2`, 3_600_000); // a checkpoint an older snapshot published
    await memory.client().putDoc(`snapshots/${INDEX}/5/snapshot`, manifest(5, [`segments/${INDEX}/1`]));
    await publish(`segments/${INDEX}/7`, 3_600_000); // an upload whose entry has not come yet
    await publish(`snapshots/${INDEX}/40/majors/3`, 0); // a newer snapshot being written
    await publish(`snapshots/${INDEX}/${seq}/majors/1`, 0);
    const m = manifest(seq, [`snapshots/${INDEX}/${seq}/majors/1`]);
    m.replica = { last: seq, active: "1", majors: [1, 2], maxMinor: {}, appendedAt: 0, purgedAt: seq };
    return m;
  }

  test("every older copy goes once the live nodes have applied it; an upload on its way stays", async () => {
    const m = await purgeSnapshot(20);
    await reportAt("b", 4); // the snapshot's own truncation cannot pass this node
    await snapshot(m);
    expect(memory.entries.filter((e) => e !== null).length).toBeGreaterThan(1);
    await reportAt("b", 20);

    expect(await snapshots.erase(INDEX, m, () => false, 0)).toEqual({ files: 2, snapshots: 1, entries: 0 });
    expect([...memory.files.keys()].sort()).toEqual([
      `segments/${INDEX}/7`,
      `snapshots/${INDEX}/20/majors/1`,
      `snapshots/${INDEX}/40/majors/3`,
    ]);
    expect([...memory.docs.keys()].filter((n) => n.startsWith("snapshots/")).sort()).toEqual([
      `snapshots/${INDEX}/20/snapshot`,
      `snapshots/${INDEX}/erased`,
      `snapshots/${INDEX}/latest`,
    ]);
    // Only the snapshot's own entry is left, and the pointer says so (a node gone restores).
    expect(memory.entries.flatMap((e, i) => (e === null ? [] : [i + 1]))).toEqual([20]);
    expect(await snapshots.pointer(INDEX)).toMatchObject({ seq: 20, truncatedBefore: 20 });
    // The other nodes, which watch the purges up to 20, stop watching (D-298).
    expect(await snapshots.erasedThrough(INDEX)).toBe(20);
  });

  test("a pointer that went back to an older snapshot meanwhile is moved forward, and the copies go", async () => {
    const m = await purgeSnapshot(20);
    await reportAt("b", 20);
    await snapshot(m);
    // A periodic snapshot at 5, taken before the purge, wrote the pointer after the purge's own.
    await memory.client().putDoc(`snapshots/${INDEX}/latest`, {
      manifest: `snapshots/${INDEX}/5/snapshot`,
      seq: 5,
      truncatedBefore: 5,
    });

    expect(await snapshots.erase(INDEX, m, () => false, 0)).toEqual({ files: 2, snapshots: 1, entries: 0 });
    expect(memory.docs.has(`snapshots/${INDEX}/5/snapshot`)).toBe(false);
    expect(await snapshots.pointer(INDEX)).toMatchObject({
      manifest: `snapshots/${INDEX}/20/snapshot`,
      seq: 20,
      truncatedBefore: 20,
    });
  });

  test("nothing goes while a live node has not applied it", async () => {
    const m = await purgeSnapshot(20);
    await reportAt("b", 4);
    await snapshot(m);
    const files = [...memory.files.keys()].sort();

    expect(await snapshots.erase(INDEX, m, () => true, 0)).toBeUndefined();
    expect([...memory.files.keys()].sort()).toEqual(files);
    expect(memory.docs.has(`snapshots/${INDEX}/5/snapshot`)).toBe(true);
    expect(await snapshots.pointer(INDEX)).toMatchObject({ truncatedBefore: 5 });
    // Not said to be done: the nodes watching the purge go on watching.
    expect(await snapshots.erasedThrough(INDEX)).toBe(0);
  });
});
