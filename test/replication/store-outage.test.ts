// The shared PostgreSQL unreachable while a region takes record writes (D-295): a replicated write
// is answered once the change log has it and its node applied it, so it needs nothing more of the
// store than the lookups of its key and index, made a moment before (cached for 5 s; older ones
// are tried against the store first: test/e2e/store-outage.test.ts). The other region serves it;
// once the store is back, every region's version list has it: the rows the writer could not
// record are written by the nodes' backup batches, which keep them until the store takes them.
import { describe, expect, it } from "vitest";
import { logRegionsOnFailure, type Regions, regionsAvailable, useRegions } from "../support/regions.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The versions a region lists of the test's index (none while it cannot say). */
const listedOn = (r: Regions) => async (node: number) => {
  const reply = await r.http(node).get(`/v1/indexes/${r.index}/versions`);
  return reply.status === 200 ? (reply.body.versions as { version: string }[]).map((v) => v.version) : [];
};

describe.skipIf(!regionsAvailable)("the shared store goes away under replicated writes", () => {
  const regions = useRegions(["frankfurt", "london"], {}, {}, { storeProxy: true });

  it("acknowledged writes are served elsewhere and listed once the store is back", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    const store = r.store!;
    const listed = listedOn(r);
    const before = await r.http(0).put(`/v1/indexes/${r.index}/records/lamp`, { title: "Desk lamp" });
    expect(before.status, before.text).toBe(200);
    // Both regions look the key and the index up now: the writes below need no more of the store.
    const seen = await r.http(1).get(`/v1/indexes/${r.index}/records/lamp?minVersion=${before.body.indexVersion}`);
    expect(seen.status, seen.text).toBe(200);

    await store.cut();
    const written: string[] = [];
    for (const id of ["chair", "table", "shelf"]) {
      const reply = await r.http(0).put(`/v1/indexes/${r.index}/records/${id}`, { title: `Oak ${id}` });
      expect(reply.status, reply.text).toBe(200);
      written.push(reply.body.indexVersion as string);
    }
    const newest = written.at(-1)!;
    const elsewhere = await r.http(1).get(`/v1/indexes/${r.index}/records/shelf?minVersion=${newest}`);
    expect(elsewhere.status, elsewhere.text).toBe(200);
    expect(elsewhere.body.title).toBe("Oak shelf");
    // Held meanwhile by every node (none could write them): a moment more, then the store is back.
    await sleep(1_500);

    await store.open();
    for (const node of [0, 1]) {
      await expect.poll(() => listed(node), { timeout: 20_000 }).toEqual(expect.arrayContaining(written));
    }
  }, 90_000);

  it("one that hangs: writes past their lookups' 5 s are answered within seconds too (D-350)", async () => {
    const r = regions();
    logRegionsOnFailure(regions);
    const store = r.store!;
    const before = await r.http(0).put(`/v1/indexes/${r.index}/records/pen`, { title: "Fountain pen" });
    expect(before.status, before.text).toBe(200);
    const seen = await r.http(1).get(`/v1/indexes/${r.index}/records/pen?minVersion=${before.body.indexVersion}`);
    expect(seen.status, seen.text).toBe(200);

    // Connections open and silent; past the 5 s a lookup is used without asking the store.
    store.hang();
    let written = "";
    const service = `hung-${Date.now()}`;
    try {
      await sleep(6_000);
      // Control-plane calls need the store: 503 after 10 s (D-360), a change saying it may still
      // be applied.
      const control = [() => r.http(1).post("/v1/services", { name: service }), () => r.http(0).get("/v1/indexes")].map(
        async (call) => {
          const at = Date.now();
          const answer = await call();
          return { answer, ms: Date.now() - at };
        },
      );
      const asked = Date.now();
      const reply = await r.http(0).put(`/v1/indexes/${r.index}/records/nib`, { title: "Steel nib" });
      expect(reply.status, reply.text).toBe(200);
      expect(Date.now() - asked).toBeLessThan(8_000);
      written = reply.body.indexVersion as string;
      const elsewhere = await r.http(1).get(`/v1/indexes/${r.index}/records/nib?minVersion=${written}`);
      expect(elsewhere.status, elsewhere.text).toBe(200);
      expect(elsewhere.body.title).toBe("Steel nib");
      const [created, listed] = await Promise.all(control);
      for (const { answer, ms } of [created!, listed!]) {
        expect(answer.status, answer.text).toBe(503);
        expect(ms).toBeGreaterThanOrEqual(9_000);
        expect(ms).toBeLessThan(15_000);
      }
      expect(created!.answer.body.detail).toMatch(/did not answer within 10 s; this change is applied if the store/);
      expect(listed!.answer.body.detail).toMatch(/did not answer within 10 s; try again shortly$/);
    } finally {
      store.resume();
    }
    for (const node of [0, 1]) await expect.poll(() => listedOn(r)(node), { timeout: 20_000 }).toContain(written);
    // The service the store recorded late is there or not, and a second create says which.
    const there = (await r.http(1).get(`/v1/services/${service}`)).status;
    expect([200, 404]).toContain(there);
    expect((await r.http(1).post("/v1/services", { name: service })).status).toBe(there === 200 ? 409 : 201);
  }, 90_000);
});
