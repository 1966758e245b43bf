// A region that reads the change log from a mirror of its own (SIFT_NATS_MIRROR,
// docs/replication.md): the mirror keeps the stream's sequence numbers, so the region applies the
// same entries in the same order. Its own writes still go to the stream and come back through the
// mirror; truncation purges the mirror as it purges the stream; and a restart replays from it.
// A mirror that is gone (or stops following) is read around: the region reads the stream itself
// until its mirror, made again, has caught up; so is an entry the mirror lost (D-341), and a
// mirror that stalled and came back under other sequence numbers (D-355), or that stays stopped
// (D-357).
import { DiscardPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RATE_LIMITS_OFF } from "../support/limits.ts";
import { streamState } from "../support/nats.ts";
import { logRegionsOnFailure, readBack, type Regions, regionsAvailable, startRegions } from "../support/regions.ts";

describe.skipIf(!regionsAvailable)("a region that reads the log from its own mirror", () => {
  let r: Regions;
  beforeAll(async () => {
    r = await startRegions(
      ["frankfurt", "london"],
      // Positions reported every 2 s: truncation goes as far as every node has applied.
      { ...RATE_LIMITS_OFF, SIFT_REPLICATION_SNAPSHOT_EVERY: "10", SIFT_REPLICATION_NODE_GONE_MS: "6000" },
      // A mirror stopped behind the stream is nudged after 2 s, not 60 (D-357).
      { london: { SIFT_NATS_MIRROR: "SIFT_london", SIFT_NATS_MIRROR_STALLED_MS: "2000" } },
    );
  }, 120_000);
  afterAll(() => r?.stop());

  it("serves every write, writes through the stream, and is truncated with it", async () => {
    logRegionsOnFailure(() => r);
    const mirror = await streamState(r.nats, "SIFT_london");
    expect(mirror?.mirror).toBe("SIFT");
    // London's follower reads the mirror.
    await expect
      .poll(async () => (await streamState(r.nats, "SIFT_london"))!.state.consumer_count, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(1);

    // Writes in both regions, each read back with minVersion in the other. A read that finds the
    // other region still behind after its 2 s is a 503 and is asked again, as a client does: the
    // node that takes an index's snapshot holds its later entries meanwhile (one took over 2 s in
    // a slow CI run).
    const written: string[] = [];
    for (let i = 0; i < 30; i++) {
      const [from, to] = i % 3 === 2 ? [1, 0] : [0, 1];
      const put = await r.http(from).put(`/v1/indexes/${r.index}/records/m-${i}`, { title: `Mirrored ${i}` });
      expect(put.status, put.text).toBe(200);
      expect(await readBack(r, to, `m-${i}`, put.body.indexVersion as string)).toBe(`Mirrored ${i}`);
      written.push(`m-${i}`);
    }

    // Snapshots every 10 entries of the index let the stream drop what they hold and both nodes
    // have applied (as they last reported); the mirror is purged the same way, sequence for
    // sequence.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    for (let i = 30; i < 40; i++) {
      expect((await r.http(0).put(`/v1/indexes/${r.index}/records/m-${i}`, { title: `Mirrored ${i}` })).status).toBe(
        200,
      );
      written.push(`m-${i}`);
    }
    await expect
      .poll(async () => (await streamState(r.nats, "SIFT"))!.state.first_seq, { timeout: 30_000, interval: 200 })
      .toBeGreaterThan(10);
    const origin = (await streamState(r.nats, "SIFT"))!.state;
    await expect
      .poll(async () => (await streamState(r.nats, "SIFT_london"))!.state, { timeout: 10_000, interval: 200 })
      .toMatchObject({ first_seq: origin.first_seq, last_seq: origin.last_seq });

    // A restart goes on from its position, reading the mirror, and has everything.
    const london = r.nodes[1]!;
    await london.kill("SIGKILL");
    const meanwhile = await r.http(0).put(`/v1/indexes/${r.index}/records/while-down`, { title: "While down" });
    expect(meanwhile.status).toBe(200);
    await london.start();
    const back = await r
      .http(1)
      .get(`/v1/indexes/${r.index}/records/while-down?minVersion=${meanwhile.body.indexVersion}`);
    expect(back.status, back.text).toBe(200);
    for (const id of written) expect((await r.http(1).get(`/v1/indexes/${r.index}/records/${id}`)).status).toBe(200);

    // The mirror deleted under the running region: it reads the stream itself meanwhile, so
    // writes in either region still reach it (its own come back through the stream), and it
    // makes the mirror again and reads that once the mirror has caught up.
    const nc = await connect({ servers: r.nats.urls.split(",") });
    try {
      const deleted = JSON.parse((await nc.request("$JS.API.STREAM.DELETE.SIFT_london", "")).string());
      expect(deleted).toMatchObject({ success: true });
    } finally {
      await nc.close();
    }
    for (let i = 0; i < 6; i++) {
      const [from, to] = i % 2 === 0 ? [0, 1] : [1, 0];
      const put = await r.http(from).put(`/v1/indexes/${r.index}/records/gone-${i}`, { title: `No mirror ${i}` });
      expect(put.status, put.text).toBe(200);
      // Until the region notices (a few seconds), a read with minVersion answers 503 after its 2 s.
      const read = () => r.http(to).get(`/v1/indexes/${r.index}/records/gone-${i}?minVersion=${put.body.indexVersion}`);
      await expect.poll(async () => (await read()).status, { timeout: 10_000 }).toBe(200);
    }
    await expect.poll(async () => (await streamState(r.nats, "SIFT_london"))?.mirror, { timeout: 30_000 }).toBe("SIFT");
    await expect
      .poll(async () => (await streamState(r.nats, "SIFT_london"))!.state.consumer_count, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(1);
    const last = await r.http(0).put(`/v1/indexes/${r.index}/records/mirrored-again`, { title: "Mirrored again" });
    const again = await r
      .http(1)
      .get(`/v1/indexes/${r.index}/records/mirrored-again?minVersion=${last.body.indexVersion}`);
    expect(again.status, again.text).toBe(200);
  }, 120_000);

  it("reads an entry its mirror lost from the stream", async () => {
    logRegionsOnFailure(() => r);
    const london = r.nodes[1]!;
    await london.kill("SIGKILL");
    const versions: string[] = [];
    for (let i = 0; i < 3; i++) {
      const put = await r.http(0).put(`/v1/indexes/${r.index}/records/lost-${i}`, { title: `Lost ${i}` });
      expect(put.status, put.text).toBe(200);
      versions.push(put.body.indexVersion);
    }
    // The mirror takes all three, then loses the middle one, as NATS 2.9's mirrors of several
    // replicas did when their leaders changed (D-341): a gap the stream does not have.
    const end = (await streamState(r.nats, "SIFT"))!.state.last_seq;
    await expect.poll(async () => (await streamState(r.nats, "SIFT_london"))!.state.last_seq).toBe(end);
    const nc = await connect({ servers: r.nats.urls.split(",") });
    try {
      const jsm = await jetstreamManager(nc, { checkAPI: false });
      expect((await jsm.streams.getMessage("SIFT", { seq: end - 1 }))!.string()).toContain("lost-1");
      expect(await jsm.streams.deleteMessage("SIFT_london", end - 1)).toBe(true);
    } finally {
      await nc.close();
    }

    const before = london.output().length;
    const since = () => london.output().slice(before);
    await london.start();
    for (let i = 2; i >= 0; i--) expect(await readBack(r, 1, `lost-${i}`, versions[2]!, 30_000)).toBe(`Lost ${i}`);
    expect(since()).toContain("the region's mirror lacks entries the stream holds; reading the stream");
    // And it goes back to its mirror, past the gap.
    await expect
      .poll(() => since().includes("the region's mirror follows the stream again; reading it"), { timeout: 30_000 })
      .toBe(true);
    const after = await r.http(0).put(`/v1/indexes/${r.index}/records/lost-after`, { title: "After the gap" });
    expect(after.status, after.text).toBe(200);
    expect(await readBack(r, 1, "lost-after", after.body.indexVersion, 30_000)).toBe("After the gap");
  }, 120_000);

  /** Tools to hold London's mirror and to check what London does about it, from `since()`. */
  async function mirrorTools() {
    const london = r.nodes[1]!;
    let before = london.output().length;
    const since = () => london.output().slice(before);
    const nc = await connect({ servers: r.nats.urls.split(",") });
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const write = async (id: string, from: number) => {
      const put = await r.http(from).put(`/v1/indexes/${r.index}/records/${id}`, { title: `Title ${id}` });
      expect(put.status, put.text).toBe(200);
      return put.body.indexVersion as string;
    };
    return {
      london,
      jsm,
      since,
      /** What London logs from now on is what `since` reads. */
      logFromNow: () => {
        before = london.output().length;
      },
      close: () => nc.close(),
      write,
      // The mirror's store refuses what it is sent, as when a limit or its disk is reached: it
      // stops following the stream while it still exists. Lifted, NATS 2.9's mirror goes on from
      // the stream's end without the entries it refused, under its own next numbers.
      stall: async () => {
        const info = await jsm.streams.info("SIFT_london");
        await jsm.streams.update("SIFT_london", {
          ...info.config,
          max_msgs: info.state.messages,
          discard: DiscardPolicy.New,
        });
        return info.state.last_seq;
      },
      lift: async () => {
        const info = await jsm.streams.info("SIFT_london");
        await jsm.streams.update("SIFT_london", { ...info.config, max_msgs: -1, discard: DiscardPolicy.Old });
      },
      servedInLondon: async (ids: string[], version: string) => {
        for (const id of ids) expect(await readBack(r, 1, id, version, 30_000)).toBe(`Title ${id}`);
      },
      readsAround: () =>
        expect
          .poll(() => since().includes("the region's mirror does not follow the stream; reading the stream"), {
            timeout: 30_000,
          })
          .toBe(true),
      /** London reads its mirror again, which holds the stream's entries at their positions. */
      mirroredAgain: async () => {
        await expect
          .poll(() => since().includes("the region's mirror follows the stream again; reading it"), { timeout: 60_000 })
          .toBe(true);
        const end = (await jsm.streams.info("SIFT")).state.last_seq;
        await expect.poll(async () => (await jsm.streams.info("SIFT_london")).state.last_seq).toBe(end);
        const [mine, home] = await Promise.all([
          jsm.streams.getMessage("SIFT_london", { seq: end }),
          jsm.streams.getMessage("SIFT", { seq: end }),
        ]);
        expect(mine!.string()).toBe(home!.string());
        // Writes through London still fit the log (its positions are the stream's).
        const version = await write(`through-london-${end}`, 1);
        expect(await readBack(r, 0, `through-london-${end}`, version, 30_000)).toBe(`Title through-london-${end}`);
      },
    };
  }

  it("reads around a mirror that stalls, and makes again one that comes back renumbered", async () => {
    logRegionsOnFailure(() => r);
    const m = await mirrorTools();
    try {
      // While London follows it: read around, then made again. Lifted as soon as London reads
      // around it, before London would nudge a mirror that stays stopped (the next test).
      const stalledAt = await m.stall();
      const first = ["stalled-0", "stalled-1", "stalled-2", "stalled-3"];
      let version = "";
      for (const [i, id] of first.entries()) version = await m.write(id, i % 2);
      await m.readsAround();
      expect((await m.jsm.streams.info("SIFT_london")).state.last_seq).toBe(stalledAt);
      await m.lift();
      const resumed = ["resumed-0", "resumed-1", "resumed-2", "resumed-3"];
      for (const [i, id] of resumed.entries()) version = await m.write(id, i % 2);
      await m.servedInLondon([...first, ...resumed], version);
      await expect
        .poll(
          () =>
            m
              .since()
              .includes("the region's mirror holds other entries than the stream at its positions; making it again"),
          { timeout: 30_000 },
        )
        .toBe(true);
      await m.mirroredAgain();

      // While London is down: restarted, it must not take the renumbered mirror's entries for the
      // ones at its position (it would skip those the mirror refused).
      await m.london.kill("SIGKILL");
      m.logFromNow();
      const refusedAfter = await m.stall();
      const away = ["away-0", "away-1", "away-2", "away-3", "away-4", "away-5"];
      for (const id of away.slice(0, 3)) version = await m.write(id, 0);
      await m.lift();
      for (const id of away.slice(3)) version = await m.write(id, 0);
      // The mirror went on, renumbered, before London starts.
      await expect
        .poll(async () => (await m.jsm.streams.info("SIFT_london")).state.last_seq, { timeout: 10_000 })
        .toBe(refusedAfter + 3);
      await m.london.start();
      await m.servedInLondon(away, version);
      expect(m.since()).toContain(
        "the region's mirror holds other entries than the stream at its positions; making it again",
      );
      await m.mirroredAgain();
    } finally {
      await m.close();
    }
  }, 240_000);

  it("nudges a mirror that stays stopped behind the stream, then makes it again (D-357)", async () => {
    logRegionsOnFailure(() => r);
    const m = await mirrorTools();
    try {
      // An index of its own with fewer entries than a snapshot's 10: no truncation frees room in
      // the held mirror, which would let it go on renumbered (D-355's case) instead of stopping.
      const { serviceName } = (await r.http(0).get(`/v1/indexes/${r.index}`)).body as { serviceName: string };
      expect((await r.http(0).post("/v1/indexes", { name: "stopped", serviceName })).status).toBe(201);
      await expect.poll(async () => (await r.http(1).get("/v1/indexes/stopped")).status, { timeout: 30_000 }).toBe(200);
      const stalledAt = await m.stall();
      const written: [string, string][] = [];
      for (let i = 0; i < 4; i++) {
        const put = await r.http(i % 2).put(`/v1/indexes/stopped/records/s-${i}`, { title: `Stopped ${i}` });
        expect(put.status, put.text).toBe(200);
        written.push([`s-${i}`, put.body.indexVersion as string]);
      }
      // Served in London from the stream.
      for (const [id, version] of written) {
        await expect
          .poll(async () => (await r.http(1).get(`/v1/indexes/stopped/records/${id}?minVersion=${version}`)).status, {
            timeout: 30_000,
          })
          .toBe(200);
      }
      await m.readsAround();
      // SIFT_NATS_MIRROR_STALLED_MS is 2 s for London here (60 s by default): its leader first,
      // which does not lift the limit, then the mirror made again as Sift makes it.
      await expect
        .poll(
          () => m.since().includes("the region's mirror has stopped behind the stream; asking its leader to step down"),
          { timeout: 30_000 },
        )
        .toBe(true);
      expect((await m.jsm.streams.info("SIFT_london")).state.last_seq).toBe(stalledAt);
      await expect
        .poll(() => m.since().includes("the region's mirror has stopped behind the stream; making it again"), {
          timeout: 40_000,
        })
        .toBe(true);
      expect(m.since()).not.toContain("holds other entries than the stream");
      await m.mirroredAgain();
      expect((await m.jsm.streams.info("SIFT_london")).config.max_msgs).toBe(-1);
      for (const [id] of written) expect((await r.http(1).get(`/v1/indexes/stopped/records/${id}`)).status).toBe(200);
    } finally {
      await m.close();
    }
  }, 180_000);
});
