// One upload through the API, as a client makes it: start, PUT the file, complete, then wait
// until it succeeded where it was sent and, given other regions, until they serve it too.
import { createReadStream } from "node:fs";
import { Readable } from "node:stream";
import type { Keyed } from "../test/support/regions.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Times from the PUT: until it succeeded here, and until every one of `others` serves record b-1. */
export async function uploadAndWait(origin: Keyed, index: string, file: string, others: Keyed[] = []) {
  const started = await origin.post("/v1/uploads/start", { indexName: index });
  if (started.status !== 200) throw new Error(`upload start: ${started.status} ${started.text}`);
  const t0 = performance.now();
  const put = await fetch(started.body.uploadUrl, {
    method: "PUT",
    body: Readable.toWeb(createReadStream(file)) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  if (put.status !== 200) throw new Error(`upload PUT: ${put.status}`);
  const version = started.body.indexVersion as string;
  await origin.post("/v1/uploads/complete", { indexName: index, indexVersion: version });
  for (;;) {
    const status = await origin.get(`/v1/uploads/${index}/${version}`);
    if (status.body.state === "succeeded") break;
    if (status.body.state === "failed") throw new Error(`ingest failed: ${status.text}`);
    await sleep(100);
  }
  const here = performance.now() - t0;
  await Promise.all(
    others.map(async (r) => {
      for (;;) {
        const read = await r.get(`/v1/indexes/${index}/records/b-1?minVersion=${version}`);
        if (read.status === 200) return;
        await sleep(100);
      }
    }),
  );
  return { here, everywhere: performance.now() - t0 };
}
