// A snapshot holds a major's files while it publishes them, after the index's later entries are
// applied again (docs/replication.md, Catch-up): what it holds stays whole whatever lands
// meanwhile, and opens as the major it was.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { createEmbeddedEngine } from "../../src/engine/embedded/index.ts";
import type { SearchEngine, SearchRecord } from "../../src/ports/engine.ts";

const dirs: string[] = [];
const engines: SearchEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function openEngine(dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-held-"))): Promise<SearchEngine> {
  dirs.push(dataDir);
  const engine = createEmbeddedEngine({ dataDir });
  await engine.open();
  engines.push(engine);
  return engine;
}

const records: SearchRecord[] = Array.from({ length: 50 }, (_, i) => ({ id: `r${i}`, title: `Lamp number ${i}` }));

async function withMajor(engine: SearchEngine): Promise<void> {
  await engine.createIndex("k");
  const writer = await engine.bulkWriter("k", 1);
  await writer.add(records);
  await writer.commit();
}

test("held files outlive the index's drop and open as the major they were", async () => {
  const engine = await openEngine();
  await withMajor(engine);
  const held = await engine.holdSegmentFiles!("k", 1);
  await engine.dropIndex("k");

  const other = await openEngine();
  await other.createIndex("k");
  await other.importMajor!("k", { major: 1, parent: null, records: records.length }, async (dir) => {
    fs.mkdirSync(dir, { recursive: true });
    for (const f of held.files) fs.copyFileSync(f.path, path.join(dir, f.name));
  });
  expect(await other.get("k", "1", "r7")).toEqual(records[7]);
  expect(await other.count("k", "1")).toBe(records.length);

  await held.release();
  for (const f of held.files) expect(fs.existsSync(f.path)).toBe(false);
});

test("files a stopped process held are gone when the engine opens again", async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-held-"));
  const engine = await openEngine(dataDir);
  await withMajor(engine);
  const held = await engine.holdSegmentFiles!("k", 1);
  expect(held.files.length).toBeGreaterThan(0);
  await engine.close();
  engines.length = 0;

  const again = await openEngine(dataDir);
  for (const f of held.files) expect(fs.existsSync(f.path)).toBe(false);
  expect(await again.get("k", "1", "r7")).toEqual(records[7]);
});
