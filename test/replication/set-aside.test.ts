// An entry a node cannot apply (D-376): here a bulk version whose files went missing from the
// object store while London's node was down. Before, the node retried that entry for ever, and
// every later entry of every index waited behind it: it never caught up, never became ready, and
// held back every index's truncation. Now it sets that index aside after a while (2 s here, two
// minutes by default), catches up and serves the other indexes, answers 503 for that one, and
// brings it back from the snapshot Frankfurt's node takes when London says how far its copy goes.
// GET /v1/regions says meanwhile which index London has set aside.
// Real processes: a NATS cluster of three, two regions.
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { Objm } from "@nats-io/obj";
import { describe, expect, it } from "vitest";
import { RATE_LIMITS_OFF } from "../support/limits.ts";
import {
  keyed,
  logRegionsOnFailure,
  makeIndex,
  type Regions,
  readBack,
  regionsAvailable,
  startCaughtUp,
  uploadCsv,
  useRegions,
} from "../support/regions.ts";

const FRANKFURT = 0;
const LONDON = 1;

/** Removes the manifest of a segment's files from the object store, behind Sift's back. */
async function loseFiles(r: Regions, name: string): Promise<void> {
  const nc = await connect({ servers: r.nats.urls.split(",") });
  try {
    const files = await new Objm(jetstream(nc)).open("SIFT_files");
    expect((await files.delete(`${name}/manifest`)).success, `${name}/manifest`).toBe(true);
    expect(await files.info(`${name}/manifest`)).toMatchObject({ deleted: true });
  } finally {
    await nc.close();
  }
}

/** London's indexes, as GET /v1/regions of the node `asked` lists them: whether each is set aside. */
async function setAsideIn(r: Regions, asked: number): Promise<Record<string, boolean>> {
  const listed = await keyed(r.nodes[asked]!.url, r.key).get("/v1/regions");
  expect(listed.status, listed.text).toBe(200);
  const london = listed.body.regions.find((g: { id: string }) => g.id === "london");
  const indexes: { indexName: string; setAside?: boolean }[] = london.indexes;
  return Object.fromEntries(indexes.map((i) => [i.indexName, i.setAside ?? false]));
}

describe.skipIf(!regionsAvailable)("an index whose entry a node cannot apply", () => {
  const regions = useRegions(["frankfurt", "london"], {
    ...RATE_LIMITS_OFF,
    SIFT_REPLICATION_SET_ASIDE_AFTER_MS: "2000",
    // No periodic look or snapshot: only London's notice gets a snapshot taken.
    SIFT_REPLICATION_HISTORY_CHECK_MS: "3600000",
  });

  it("is set aside there: the node catches up and serves the others, then brings it back", async () => {
    const r = regions();
    logRegionsOnFailure(regions, 40);
    const london = r.nodes[LONDON]!;
    const frankfurt = r.http(FRANKFURT);
    const crates = (await makeIndex(r, "crates")).id;
    await makeIndex(r, "boxes");
    const first = await frankfurt.put("/v1/indexes/crates/records/first", { title: "First crate" });
    expect(first.status, first.text).toBe(200);
    expect(await readBack(r, LONDON, "first", first.body.indexVersion, 10_000, "crates")).toBe("First crate");

    await london.kill();
    const csv = ["id,title", ...Array.from({ length: 50 }, (_, i) => `crate-${i},Wooden crate ${i}`)].join("\n");
    const bulk = await uploadCsv(frankfurt, "crates", csv);
    await loseFiles(r, `segments/${crates}/${bulk}`);
    const box = await frankfurt.put("/v1/indexes/boxes/records/lid", { title: "Box lid" });
    expect(box.status, box.text).toBe(200);

    // Before, London never caught up: the bulk entry held every later one back.
    await startCaughtUp(london);
    const lid = await keyed(london.url, r.key).get(`/v1/indexes/boxes/records/lid?minVersion=${box.body.indexVersion}`);
    expect(lid.status, lid.text).toBe(200);
    expect(london.output()).toMatch(/set an index aside on this node/);
    // Listed with the other, as the shared store knows it while London cannot serve it (before:
    // the whole list was 503 there while the index was aside).
    const listed = await keyed(london.url, r.key).get("/v1/indexes");
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.indexes.map((i: { name: string; records: number }) => [i.name, i.records])).toEqual([
      ["boxes", 1],
      ["crates", 50],
      ["products", 0],
    ]);
    // GET /v1/regions says which index London has set aside, asked of London or of Frankfurt.
    expect(await setAsideIn(r, LONDON)).toEqual({ boxes: false, crates: true, products: false });
    expect(await setAsideIn(r, FRANKFURT)).toEqual({ boxes: false, crates: true, products: false });

    // Frankfurt snapshots "crates" for it (its files published again), and London restores it.
    expect(await readBack(r, LONDON, "crate-7", bulk, 30_000, "crates")).toBe("Wooden crate 7");
    expect(london.output()).toMatch(/brought a set-aside index back/);
    expect((await setAsideIn(r, LONDON)).crates).toBe(false);
    const next = await frankfurt.put("/v1/indexes/crates/records/next", { title: "Next crate" });
    expect(next.status, next.text).toBe(200);
    expect(await readBack(r, LONDON, "next", next.body.indexVersion, 10_000, "crates")).toBe("Next crate");
  }, 120_000);
});
