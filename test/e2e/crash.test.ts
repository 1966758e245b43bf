// kill -9 of a real server process: no acknowledged write is lost, and an ingest cut off in the
// middle is resumed after the restart rather than left "running" forever.
import { afterAll, beforeAll, expect, test } from "vitest";
import { Http } from "../support/http.ts";
import { siftProcess, type SiftProcess } from "../support/process.ts";
import { createKey, signUp } from "../support/world.ts";

let proc: SiftProcess;
let http: Http;
let key: string;

beforeAll(async () => {
  proc = await siftProcess();
  await proc.start();
  http = new Http(proc.url);
  const session = await signUp(http, "crash@test.example");
  key = await createKey(session, "adm");
  expect((await http.post("/v1/services", { name: `crash-${process.pid}` }, { key })).status).toBe(201);
  expect(
    (await http.post("/v1/indexes", { name: "writes", serviceName: `crash-${process.pid}` }, { key })).status,
  ).toBe(201);
  expect((await http.post("/v1/indexes", { name: "bulk", serviceName: `crash-${process.pid}` }, { key })).status).toBe(
    201,
  );
});
afterAll(() => proc?.destroy());

test("every acknowledged write survives kill -9 in the middle of a stream of writes", async () => {
  const acknowledged: string[] = [];
  let stop = false;
  const writer = (async () => {
    for (let i = 0; !stop; i++) {
      const id = `w${i}`;
      try {
        const reply = await http.put(
          `/v1/indexes/writes/records/${id}`,
          { title: `Write ${i}`, weight: i + 1 },
          { key },
        );
        if (reply.status === 200) acknowledged.push(id);
      } catch {
        return; // the connection died with the server
      }
    }
  })();
  while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
  await proc.kill("SIGKILL");
  stop = true;
  await writer;

  await proc.start();
  const missing: string[] = [];
  for (const id of acknowledged) {
    const reply = await http.get(`/v1/indexes/writes/records/${id}`, { key });
    if (reply.status !== 200) missing.push(id);
  }
  expect(missing).toEqual([]);
  // The versions the engine and the store agree on continue without reusing ids.
  const next = await http.put("/v1/indexes/writes/records/after", { title: "After the crash" }, { key });
  expect(next.status).toBe(200);
  const versions = (await http.get("/v1/indexes/writes/versions", { key })).body.versions.map(
    (v: { version: string }) => v.version,
  );
  expect(new Set(versions).size).toBe(versions.length);
});

test("an ingest cut off by kill -9 is resumed after the restart and completes", async () => {
  const rows = Array.from(
    { length: 400_000 },
    (_, i) => `{"id":"b${i}","title":"Bulk record ${i}","weight":${(i % 1000) + 1}}`,
  ).join("\n");
  const started = (await http.post("/v1/uploads/start", { indexName: "bulk" }, { key })).body;
  expect((await fetch(started.uploadUrl, { method: "PUT", body: rows })).status).toBe(200);
  expect(
    (await http.post("/v1/uploads/complete", { indexName: "bulk", indexVersion: started.indexVersion }, { key }))
      .status,
  ).toBe(200);
  const status = () => http.get(`/v1/uploads/bulk/${started.indexVersion}`, { key }).then((r) => r.body);

  let seen = await status();
  while (seen.state === "queued" || (seen.state === "running" && seen.recordsIngested === 0)) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await status();
  }
  expect(seen.state).toBe("running");
  await proc.kill("SIGKILL");

  await proc.start();
  for (let i = 0; i < 600 && !["succeeded", "failed"].includes(seen.state); i++) {
    await new Promise((r) => setTimeout(r, 100));
    seen = await status();
  }
  expect(seen).toMatchObject({ state: "succeeded", recordsIngested: 400_000 });
  const index = (await http.get("/v1/indexes/bulk", { key })).body;
  expect(index).toMatchObject({ activeVersion: started.indexVersion, records: 400_000 });
});
