// A large chunk is parsed in slices with a turn of the event loop before each (issue 15: an
// ingest once kept the server from answering anyone for 85 ms per 1 MiB read). Counted in turns
// of the loop, not in milliseconds: other work must run between the batches of one chunk.
import { expect, test } from "vitest";
import { openUpload } from "../../src/ingest/parse/index.ts";
import { sequentialIds } from "./parse-helpers.ts";

test("other work runs between the batches of one large chunk", async () => {
  let lines = "";
  for (let i = 0; i < 20_000; i++) lines += `${JSON.stringify({ id: `r${i}`, title: `Record number ${i}` })}\n`;
  const oneChunk = Buffer.from(lines);
  expect(oneChunk.byteLength).toBeGreaterThan(512 * 1024);
  async function* source() {
    yield oneChunk;
  }
  const upload = await openUpload(source(), { generateId: sequentialIds });
  let turns = 0;
  let running = true;
  const tick = () => {
    turns++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  const turnsAtBatch: number[] = [];
  let records = 0;
  for await (const batch of upload.batches) {
    records += batch.records.length;
    turnsAtBatch.push(turns);
  }
  running = false;
  expect(records).toBe(20_000);
  // 20 batches of 1,000 from one chunk; before, all were parsed before the loop turned once.
  expect(turnsAtBatch.at(-1)! - turnsAtBatch[0]!).toBeGreaterThanOrEqual(8);
});
