// Tests of the embedded engine beyond the port's conformance suite: exact ranking against the
// brute-force reference on every search strategy (forced through tuning), persistence, crashes,
// and storage being freed. Over 400 lines: the reference comparison's data, requests and
// configurations live next to the persistence tests that reuse them.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createEmbeddedEngine, type EmbeddedEngineOptions } from "../../src/engine/embedded/index.ts";
import {
  type FilterExpr,
  MissingBaseError,
  type RecordChange,
  type SearchEngine,
  type SearchRecord,
  type SearchRequest,
} from "../../src/ports/engine.ts";
import { parseFilter } from "../../src/search/filter.ts";
import { INDEX_FILE, type SegmentMeta } from "../../src/engine/embedded/segment/meta.ts";
import { openSegmentFile, writeSegmentFile } from "../../src/engine/embedded/segment/segment-file.ts";
import { prepareRecord, referencePage, type PreparedRecord } from "./reference.ts";
import { random } from "../support/random.ts";

const dirs: string[] = [];
const engines: SearchEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-embedded-"));
  dirs.push(dir);
  return dir;
}

async function openEngine(options: Partial<EmbeddedEngineOptions> & { dataDir: string }): Promise<SearchEngine> {
  const engine = createEmbeddedEngine(options);
  await engine.open();
  engines.push(engine);
  return engine;
}

async function bulk(engine: SearchEngine, key: string, major: number, records: SearchRecord[]): Promise<void> {
  const writer = await engine.bulkWriter(key, major);
  for (let i = 0; i < records.length; i += 97) await writer.add(records.slice(i, i + 97));
  await writer.commit();
}

// Words share prefixes and differ by diacritics and case; ids include characters whose UTF-16
// order differs from code point order.
const WORDS = [
  "san",
  "sano",
  "santa",
  "Santé",
  "sant",
  "STAR",
  "start",
  "stár",
  "río",
  "rio",
  "rion",
  "東京",
  "東",
  "x",
  "xy",
  "new",
  "newt",
  "york",
  "yorker",
  "a",
  "ab",
  "abc",
];
const ID_CHARS = ["a", "b", "c", "é", "Ω", "😀", "\ue000", "1", "9"];

function makeRecords(rand: () => number, count: number, prefix = ""): SearchRecord[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const seen = new Set<string>();
  const records: SearchRecord[] = [];
  while (records.length < count) {
    const id =
      prefix +
      Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(ID_CHARS)).join("") +
      (rand() < 0.5 ? String(records.length) : "");
    if (seen.has(id)) continue;
    seen.add(id);
    const n = 1 + Math.floor(rand() * 4);
    const title = Array.from({ length: n }, () => pick(WORDS)).join(pick([" ", "-", ", ", " / "]));
    const record: SearchRecord = {
      id,
      title,
      data: {
        price: Math.floor(rand() * 100),
        inStock: rand() < 0.5,
        details: { color: pick(["red", "blue", "Rio"]), size: rand() < 0.3 ? "10" : Math.floor(rand() * 5) },
        tags: [pick(WORDS), pick(["alpha", "beta"])],
      },
    };
    // Fields some records lack, arrays, nulls, mixed types, case variants (filters and facets).
    const data = record.data!;
    if (rand() < 0.8) data.brand = pick(["Acme", "ACME", "acme", "Bolt", "Çafé", "😀x", "\uff5e"]);
    if (rand() < 0.6)
      data.colors = Array.from({ length: Math.floor(rand() * 4) }, () => pick(["red", "blue", "Rio", "green"]));
    if (rand() < 0.4) data.sizes = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => Math.floor(rand() * 6));
    if (rand() < 0.3) data.rating = pick([1, 2.5, "2.5", true, null, [3, "x"], { n: 1 }]);
    if (rand() < 0.1) data.details = null;
    if (rand() < 0.05) data.empty = pick([[], {}]);
    if (rand() < 0.7) record.weight = 1 + Math.floor(rand() * 4) * (rand() < 0.2 ? 1000 : 1);
    if (rand() < 0.75) {
      // Few distinct places, so equal distances (ties broken by id) happen.
      const place = Math.floor(rand() * 40);
      record.latitude = (-60 + ((place * 37) % 120) + (rand() < 0.5 ? 0 : rand())).toFixed(3);
      record.longitude = (-170 + ((place * 53) % 340) + (rand() < 0.5 ? 0 : rand())).toFixed(3);
    }
    records.push(record);
  }
  return records;
}

const FILTERS = [
  "data.price<50",
  "data.inStock=true && data.price>=10",
  "!(data.details.size>=2) || data.inStock=false",
  "data.details.size=3",
  'data.brand="Acme"',
  'data.brand!="Acme"',
  'data.brand IN ["acme", "Bolt", "nothing"]',
  'data.colors="red"',
  'data.colors!="red"',
  'data.colors IN ["blue", "green"] && data.price>20',
  "data.sizes>=4",
  "data.sizes!=2",
  "data.sizes IN [0, 5]",
  "data.rating=2.5",
  'data.rating="2.5" || data.rating=true',
  "data.rating!=1",
  'data.details.size="10"',
  "EXISTS data.rating",
  "!EXISTS data.brand",
  "EXISTS data.details && !(EXISTS data.details.color)",
  "EXISTS data.empty",
  'data.brand="\uff5e" || data.brand="😀x"',
  'data.missing="x" || !(data.missing IN [1])',
  'data.brand="nobody has this" || data.price=3',
  'data.colors IN ["nobody", "has", "these"]',
];

const SORT_PATHS = [["price"], ["brand"], ["rating"], ["details", "size"], ["colors"], ["missing"]];
const FACET_PATHS = [["brand"], ["colors"], ["sizes"], ["rating"], ["details", "size"], ["inStock"], ["details"]];

function makeRequests(rand: () => number, count: number): SearchRequest[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)]!;
  const requests: SearchRequest[] = [];
  for (let i = 0; i < count; i++) {
    const scope = rand() < 0.2 ? "all" : "title";
    const n = rand() < 0.6 ? 1 : 2 + Math.floor(rand() * 2);
    const tokens = Array.from({ length: n }, () => pick([...WORDS, "alpha", "blue", "rio"]));
    // A typo now and then: one edit (not of the first character) in some token of 4+ characters.
    const typoAt = Math.floor(rand() * n);
    const chars = Array.from(tokens[typoAt]!);
    if (rand() < 0.3 && chars.length >= 4) {
      const at = 1 + Math.floor(rand() * (chars.length - 1));
      const kind = Math.floor(rand() * 4);
      if (kind === 0) chars.splice(at, 1);
      else if (kind === 1) chars.splice(at, 0, pick(["a", "e", "r", "t"]));
      else if (kind === 2) chars[at] = pick(["a", "e", "r", "t"]);
      else if (at + 1 < chars.length) [chars[at], chars[at + 1]] = [chars[at + 1]!, chars[at]!];
      tokens[typoAt] = chars.join("");
    }
    if (scope === "title") {
      const last = Array.from(tokens[n - 1]!);
      tokens[n - 1] = last.slice(0, 1 + Math.floor(rand() * last.length)).join("");
    }
    const request: SearchRequest = {
      query: tokens.join(" "),
      scope,
      weighted: rand() < 0.5,
      limit: 1 + Math.floor(rand() * 25),
    };
    if (rand() < 0.5) request.geo = { latitude: -60 + rand() * 120, longitude: -180 + rand() * 360 };
    if (rand() < 0.3) request.filter = parseFilter(pick(FILTERS)) as FilterExpr;
    if (rand() < 0.15) request.typoTolerance = false;
    if (rand() < 0.3) request.offset = Math.floor(rand() * 30);
    if (rand() < 0.25) request.sort = { path: pick(SORT_PATHS), direction: rand() < 0.5 ? "asc" : "desc" };
    if (rand() < 0.25) {
      request.facets = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
        path: pick(FACET_PATHS),
        maxValues: 1 + Math.floor(rand() * 8),
      }));
    }
    requests.push(request);
  }
  return requests;
}

function reference(records: Map<string, PreparedRecord>, request: SearchRequest) {
  return referencePage(records.values(), request);
}

async function expectSameAsReference(
  engine: SearchEngine,
  key: string,
  version: string,
  content: Map<string, PreparedRecord>,
  requests: SearchRequest[],
  exactUpTo = 10_000,
) {
  for (const request of requests) {
    const page = await engine.search(key, version, request);
    const { hits: got } = page;
    const wanted = reference(content, request);
    const expected = wanted.hits;
    const context = `${version} ${JSON.stringify(request)}`;
    if (page.totalHitsExact) expect(page.totalHits, context).toBe(wanted.totalHits);
    else {
      // Past the cap (tests lower it): a lower bound, at least the cap.
      expect(page.totalHits, context).toBeLessThanOrEqual(wanted.totalHits);
      expect(page.totalHits, context).toBeGreaterThanOrEqual(exactUpTo + 1);
    }
    expect(page.facets, context).toEqual(wanted.facets);
    expect(
      got.map((h) => h.record.id),
      context,
    ).toEqual(expected.map((h) => h.id));
    got.forEach((h, i) => {
      if (expected[i]!.distanceMeters === undefined) expect(h.distanceMeters, context).toBeUndefined();
      else expect(h.distanceMeters!, context).toBeCloseTo(expected[i]!.distanceMeters!, 3);
      expect(h.record).toEqual(content.get(h.record.id)!.record);
    });
  }
}

describe("embedded engine ranking equals the brute-force reference", () => {
  // Each configuration forces different search strategies (segment-search.ts) on the same data.
  const configurations: [string, Partial<EmbeddedEngineOptions>][] = [
    ["default strategies", {}],
    [
      "nearest-first and exact intersections everywhere",
      { tuning: { smallStream: 0, exactIntersection: 0, nearestBudget: 1e9 } },
    ],
    ["every nearest-first read over budget", { tuning: { smallStream: 0, nearestBudget: 0 } }],
    ["in-order reads of intersections switched to bitmaps at the first match", { tuning: { selectiveAfter: 1 } }],
    ["one-letter prefix index, merged term runs", { maxPrefix: 1, tuning: { maxUnionTerms: 1, smallStream: 0 } }],
    ["no prefix index beyond two letters, unions of term runs", { maxPrefix: 2, tuning: { maxUnionTerms: 1000 } }],
    ["indexes read into the heap instead of mapped", { mapSegments: false }],
    ["totals exact only up to 3 matches", { tuning: { exactTotalUpTo: 3 } }],
    ["whole match sets read from the filter's value postings wherever it bounds them", { tuning: { filterFirst: 0 } }],
  ];
  const rewritten: [string, Partial<EmbeddedEngineOptions>, Downgrade][] = [
    ["a segment built before value columns (filters, facets, sort read records)", {}, "before value columns"],
    ["value columns that keep numbers and booleans only (too many strings)", {}, "strings overflowed"],
    ["value columns that keep only presence (built before D-200)", {}, "values overflowed"],
  ];

  it.each([...configurations.map(([n, o]) => [n, o, null] as const), ...rewritten])(
    "%s: on a major, and on minors after changes and a branch",
    async (_name, options, downgrade) => {
      const rand = random(7);
      const records = makeRecords(rand, 500);
      const dataDir = tempDir();
      let engine = await openEngine({ dataDir, ...options });
      await engine.createIndex("k");
      await bulk(engine, "k", 1, records);
      if (downgrade !== null) {
        await engine.close();
        engines.length = 0;
        await downgradeSegments(dataDir, downgrade);
        engine = await openEngine({ dataDir, ...options });
      }
      const content = new Map(records.map((r) => [r.id, prepareRecord(r)]));
      const upTo = options.tuning?.exactTotalUpTo;
      await expectSameAsReference(engine, "k", "1", content, makeRequests(rand, 150), upTo);

      // A chain of changes, then a branch from the middle of it.
      const versions = new Map<string, Map<string, PreparedRecord>>([["1", content]]);
      let parent = "1";
      const fresh = makeRecords(rand, 40, "new-");
      for (let i = 1; i <= 12; i++) {
        const state = new Map(versions.get(parent)!);
        const upserts = [fresh[i]!, { ...records[i * 7]!, title: `${records[i * 7]!.title} santa`, weight: 5000 + i }];
        const deletes = [records[i * 11]!.id, fresh[i - 1]!.id];
        for (const id of deletes) state.delete(id);
        for (const r of upserts) state.set(r.id, prepareRecord(r));
        const change: RecordChange = { version: `1.${i}`, parent, upserts, deletes };
        await engine.applyChange("k", change);
        versions.set(change.version, state);
        parent = i === 6 ? "1.3" : change.version;
      }
      for (const version of ["1.3", "1.6", "1.12"]) {
        expect(await engine.count("k", version)).toBe(versions.get(version)!.size);
        await expectSameAsReference(engine, "k", version, versions.get(version)!, makeRequests(rand, 40), upTo);
      }
    },
  );
});

describe("embedded engine ranking on a version with many changed records", () => {
  it("equals the reference for words in titles only, in data only, and with typos", async () => {
    const rand = random(11);
    const engine = await openEngine({ dataDir: tempDir() });
    await engine.createIndex("k");
    const records = makeRecords(rand, 200);
    await bulk(engine, "k", 1, records);
    // Words of the changed records only, some in data only, looked up by their first characters
    // (versions/overlay.ts).
    const changed = makeRecords(rand, 600, "many-").map((r, i) => ({
      ...r,
      // One word of one record whose first and third characters only are a typo's first two.
      title: `${r.title} n${i}z w${i % 97}x${i === 300 ? " quixotic" : ""}${i === 450 ? " extraordinarily" : ""}`,
      data: { ...r.data, tags: [`k${i}`, `r${i % 13}q`, ...(i === 120 ? ["pneumatically"] : [])] },
    }));
    await engine.applyChange("k", { version: "1.1", parent: "1", upserts: changed, deletes: [] });
    const content = new Map([...records, ...changed].map((r) => [r.id, prepareRecord(r)]));
    const requests = makeRequests(rand, 60);
    for (const query of [
      ...["k599", "k17 n17z", "n42", "r12q", "w96x k5", "n599z w17", "k1"],
      // One typo each: at the end, of the first character, the first left out, one put before
      // it, the first two swapped; of the second, the second left out, one put after the first,
      // the second and third swapped (a data word too); two typos.
      ...[
        "n598zz",
        "m598z",
        "598z",
        "an598z",
        "5n98z",
        "nx98z",
        "n98z",
        "nq598z",
        "n958z",
        "kx512",
        "qixotic",
        "n5981zq",
      ],
      // Two typos (tokens of eight characters or more), compared with every distinct word: in a
      // title, as a typed beginning, in data only, and a token that narrows nothing beside one.
      ...["quoxotik", "extrordinarly", "extraodrinxr", "pneumaticlaly", "pnuematicaly k120", "n1z extrordinary"],
    ]) {
      requests.push({ query, scope: "all", weighted: false, limit: 20 });
      requests.push({ query, scope: "title", weighted: true, limit: 20 });
    }
    // The record of "quixotic" is found with one character left out after the first.
    const page = await engine.search("k", "1.1", { query: "qixotic", scope: "title", weighted: false, limit: 20 });
    expect(page.hits.map((h) => h.record.title)).toEqual([expect.stringContaining("quixotic")]);
    // And with two typos, typed in part (D-312).
    const typed = await engine.search("k", "1.1", {
      query: "extraodrinxr",
      scope: "title",
      weighted: false,
      limit: 20,
    });
    expect(typed.hits.map((h) => h.record.title)).toEqual([expect.stringContaining("extraordinarily")]);
    await expectSameAsReference(engine, "k", "1.1", content, requests);
  });
});

type Downgrade = "before value columns" | "strings overflowed" | "values overflowed";

/**
 * Rewrites every segment's index as a build before value columns would have, or with every
 * column's strings overflowed (numbers and booleans kept), or every column overflowed as builds
 * before D-200 did (presence only; those builds also wrote filter columns, which this one lacks,
 * so scalar filters read the records).
 */
async function downgradeSegments(dataDir: string, how: Downgrade): Promise<void> {
  const files = fs.readdirSync(dataDir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(INDEX_FILE));
  expect(files.length).toBeGreaterThan(0);
  for (const file of files) {
    const at = path.join(dataDir, file);
    const { meta, sections } = await openSegmentFile(at, false);
    const m = meta as SegmentMeta;
    expect(m.valuePaths!.length).toBeGreaterThan(5);
    if (how === "before value columns") {
      delete m.valuePaths;
      delete m.valueOverflow;
      for (const name of Object.keys(sections)) if (name.startsWith("value")) delete sections[name];
    } else {
      expect(m.scalarsKept).toBe(true);
      m.valueOverflow = m.valuePaths!.map((_, i) => i);
      if (how === "values overflowed") delete m.scalarsKept;
    }
    await writeSegmentFile(at, m, sections);
  }
}

describe("embedded engine checkpoints", () => {
  // Built one at a time on a build thread (D-281): a failed build must not hold up those queued
  // behind it, and each must still be of its own index.
  it("builds checkpoints asked for at once, each of its own index, past one that fails", async () => {
    const engine = await openEngine({ dataDir: tempDir() });
    const keys = ["a", "b", "c"];
    for (const [n, key] of keys.entries()) {
      await engine.createIndex(key);
      await bulk(engine, key, 1, makeRecords(random(10 + n), 50 + n));
      await engine.applyChange(key, {
        version: "1.1",
        parent: "1",
        upserts: [{ id: `only-${key}`, title: `Gamma ${key}` }],
        deletes: [],
      });
    }
    const failed = engine.checkpoint("a", "1.7", 2);
    const built = keys.map((key) => engine.checkpoint(key, "1.1", 3));
    await expect(failed).rejects.toThrow(/unknown version 1\.7/);
    expect(await Promise.all(built)).toEqual([{ records: 51 }, { records: 52 }, { records: 53 }]);
    for (const key of keys) {
      expect(await engine.get(key, "3", `only-${key}`)).toEqual({ id: `only-${key}`, title: `Gamma ${key}` });
      expect((await engine.versions(key)).map((v) => v.version)).toEqual(["1", "1.1", "3"]);
    }
  });
});

describe("embedded engine persistence", () => {
  it("reloads every version after a clean close", async () => {
    const dataDir = tempDir();
    const records = makeRecords(random(3), 200);
    let engine = await openEngine({ dataDir });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, records);
    await engine.applyChange("k", {
      version: "1.1",
      parent: "1",
      upserts: [{ id: "extra", title: "Santa Extra" }],
      deletes: [records[0]!.id],
    });
    const requests = makeRequests(random(4), 30);
    const before = await Promise.all(requests.map((r) => engine.search("k", "1.1", r)));
    const versions = await engine.versions("k");
    await engine.close();
    engines.length = 0;

    engine = await openEngine({ dataDir });
    expect(await engine.versions("k")).toEqual(versions);
    expect(await Promise.all(requests.map((r) => engine.search("k", "1.1", r)))).toEqual(before);
    expect(await engine.get("k", "1.1", "extra")).toEqual({ id: "extra", title: "Santa Extra" });
    expect(await engine.get("k", "1.1", records[0]!.id)).toBeNull();
    expect(await engine.get("k", "1", records[0]!.id)).toEqual(records[0]);
  });

  // Deferred: as with replication, where commits are not flushed each (D-292) and change rows
  // share a transaction for milliseconds (D-392); a change counts once a sync() after it resolved,
  // as the replica's position does.
  it.each([
    ["each change synced", "changes"],
    ["changes not synced each", "deferred"],
  ])("keeps every acknowledged change when the process is killed mid-stream (%s)", async (_, mode) => {
    const dataDir = tempDir();
    const script = path.join(import.meta.dirname, "fixtures", "write-forever.ts");
    const child = spawn(process.execPath, [script, dataDir, mode], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const acknowledged: string[] = [];
    await new Promise<void>((resolve, reject) => {
      let buffered = "";
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const lines = buffered.split("\n");
        buffered = lines.pop()!;
        for (const line of lines) if (line.startsWith("ack ")) acknowledged.push(line.slice(4));
        if (acknowledged.length >= 40) {
          child.kill("SIGKILL");
          resolve();
        }
      });
      child.on("exit", (code, signal) => {
        if (signal !== "SIGKILL") reject(new Error(`writer exited early: ${code ?? signal}`));
      });
    });
    await new Promise((resolve) => child.on("close", resolve));

    const engine = await openEngine({ dataDir });
    const held = new Set((await engine.versions("k")).map((v) => v.version));
    for (const version of acknowledged) {
      expect(held.has(version), `version ${version}`).toBe(true);
      const n = Number(version.split(".")[1]);
      expect(await engine.get("k", version, `rec${n}`)).toEqual({ id: `rec${n}`, title: `Record ${n}`, weight: n });
    }
    const last = acknowledged[acknowledged.length - 1]!;
    expect(await engine.count("k", last)).toBe(acknowledged.length + 1);
    // The engine keeps working on top of what survived.
    await engine.applyChange("k", {
      version: "1.100000",
      parent: last,
      upserts: [{ id: "after", title: "After crash" }],
      deletes: [],
    });
    expect(
      (await engine.search("k", "1.100000", { query: "after", scope: "title", weighted: false, limit: 10 })).hits.map(
        (h) => h.record.id,
      ),
    ).toEqual(["after"]);
  });

  it("leaves no trace of a bulk build killed before commit", async () => {
    const dataDir = tempDir();
    const child = spawn(
      process.execPath,
      [path.join(import.meta.dirname, "fixtures", "write-forever.ts"), dataDir, "bulk"],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    await new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("adding")) {
          child.kill("SIGKILL");
          resolve();
        }
      });
    });
    await new Promise((resolve) => child.on("close", resolve));
    const indexDir = path.join(dataDir, "segments", fs.readdirSync(path.join(dataDir, "segments"))[0]!);
    expect(fs.readdirSync(indexDir).sort()).toEqual([expect.stringMatching(/^1-/), expect.stringMatching(/^2-/)]);

    const engine = await openEngine({ dataDir });
    expect((await engine.versions("k")).map((v) => v.version)).toEqual(["1"]);
    expect(fs.readdirSync(indexDir)).toEqual([expect.stringMatching(/^1-/)]);
    expect(await engine.count("k", "1")).toBe(1);
    // The major number is free again.
    await bulk(engine, "k", 2, [{ id: "x", title: "Second" }]);
    expect(await engine.count("k", "2")).toBe(1);
  });

  it("frees a dropped major's storage", async () => {
    const dataDir = tempDir();
    const engine = await openEngine({ dataDir });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, makeRecords(random(5), 300));
    await bulk(engine, "k", 2, makeRecords(random(6), 300));
    const segmentDirs = () =>
      fs
        .readdirSync(path.join(dataDir, "segments"), { withFileTypes: true })
        .flatMap((d) => fs.readdirSync(path.join(dataDir, "segments", d.name)));
    expect(segmentDirs()).toHaveLength(2);
    await engine.dropVersion("k", "1");
    expect(segmentDirs()).toHaveLength(1);
    await engine.dropIndex("k");
    expect(fs.readdirSync(path.join(dataDir, "segments"))).toEqual([]);
  });

  it("drops an index while a build still writes files into its directory (ENOTEMPTY was a 500)", async () => {
    // Found by the contract fuzzer (issue 15): DELETE of an index while its checkpoint was
    // being written failed with ENOTEMPTY when a file appeared between rm's readdir and rmdir.
    const dataDir = tempDir();
    const engine = await openEngine({ dataDir });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, makeRecords(random(3), 50));
    const [indexDir] = fs.readdirSync(path.join(dataDir, "segments"));
    const building = path.join(dataDir, "segments", indexDir!, "2-building");
    // A build's files arriving for a while, as a worker thread writes them.
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        fs.mkdirSync(building, { recursive: true });
        fs.writeFileSync(path.join(building, `part-${i}`), "x");
        await new Promise((r) => setImmediate(r));
      }
    })();
    setTimeout(() => (writing = false), 50);
    await engine.dropIndex("k");
    writing = false;
    await writer;
  });

  it("checkpoints its write-ahead log off the server's thread when changes are not synced each", async () => {
    const dataDir = tempDir();
    const engine = await openEngine({ dataDir, syncEachChange: false });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, [{ id: "a", title: "Alpha" }]);
    const wal = path.join(dataDir, "catalog.db-wal");
    const body = "x".repeat(2_000);
    let parent = "1";
    let largest = 0;
    // Some 6 MB of records, written to the log as about 36 MB of pages: the server's connection
    // never checkpoints, so without the syncs the log would hold all of them.
    for (let n = 1; n <= 3_000; n++) {
      await engine.applyChange("k", {
        version: `1.${n}`,
        parent,
        upserts: [{ id: `r${n}`, title: `Record ${n}`, data: { body } }],
        deletes: [],
      });
      parent = `1.${n}`;
      if (n % 100 === 0) {
        await engine.sync!();
        largest = Math.max(largest, fs.statSync(wal).size);
      }
    }
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThan(8_000_000);
    expect(await engine.count("k", parent)).toBe(3_001);
  });

  it("commits a batch of chained changes together, each version readable, and after a reopen", async () => {
    const dataDir = tempDir();
    let engine = await openEngine({ dataDir });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, [{ id: "a", title: "Alpha" }]);
    const changes: RecordChange[] = [1, 2, 3, 4].map((n) => ({
      version: `1.${n}`,
      parent: n === 1 ? "1" : `1.${n - 1}`,
      upserts: [{ id: `r${n}`, title: `Record ${n}` }],
      deletes: n === 3 ? ["a"] : [],
    }));
    await engine.applyChanges!("k", changes);
    const held = async () =>
      Promise.all(
        ["1.1", "1.2", "1.3", "1.4"].map(async (v) => [await engine.count("k", v), await engine.get("k", v, "a")]),
      );
    const expected = [
      [2, { id: "a", title: "Alpha" }],
      [3, { id: "a", title: "Alpha" }],
      [3, null],
      [4, null],
    ];
    expect(await held()).toEqual(expected);
    await engine.close();
    engines.length = 0;
    engine = await openEngine({ dataDir });
    expect(await held()).toEqual(expected);
    expect(await engine.get("k", "1.4", "r2")).toEqual({ id: "r2", title: "Record 2" });
  });

  it("refuses a whole batch when one change in it does not fit, and keeps nothing of it", async () => {
    const engine = await openEngine({ dataDir: tempDir() });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, [{ id: "a", title: "Alpha" }]);
    await engine.applyChange("k", { version: "1.1", parent: "1", upserts: [], deletes: ["a"] });
    const batch: RecordChange[] = [
      { version: "1.2", parent: "1.1", upserts: [{ id: "b", title: "Beta" }], deletes: [] },
      { version: "1.1", parent: "1.2", upserts: [{ id: "c", title: "Gamma" }], deletes: [] },
    ];
    await expect(engine.applyChanges!("k", batch)).rejects.toThrow(/1\.1 must be a minor version|already exists/);
    expect((await engine.versions("k")).map((v) => v.version)).toEqual(["1", "1.1"]);
  });

  it("builds segments one after another on a kept build thread, after an abandoned build too", async () => {
    const engine = await openEngine({ dataDir: tempDir() });
    await engine.createIndex("k");
    const first = makeRecords(random(21), 300, "x");
    await bulk(engine, "k", 1, first);
    const abandoned = await engine.bulkWriter("k", 2);
    await abandoned.add(makeRecords(random(22), 100, "y"));
    await abandoned.abort();
    const third = makeRecords(random(23), 250, "z");
    await bulk(engine, "k", 3, third);
    expect(await engine.count("k", "1")).toBe(first.length);
    expect(await engine.count("k", "3")).toBe(third.length);
    expect(await engine.get("k", "3", third[7]!.id)).toEqual(third[7]);
    expect(await engine.get("k", "3", first[7]!.id)).toBeNull();
    expect((await engine.versions("k")).map((v) => v.version)).toEqual(["1", "3"]);
  });

  it("checkpoints a large version in the build thread, which reads the records itself", async () => {
    const engine = await openEngine({ dataDir: tempDir() });
    await engine.createIndex("k");
    // Over the size built on the calling thread (build/segment-build.ts).
    const records = makeRecords(random(31), 24_000);
    await bulk(engine, "k", 1, records);
    await engine.applyChange("k", {
      version: "1.1",
      parent: "1",
      upserts: [
        { id: "new", title: "Santa Nueva", weight: 5 },
        { ...records[5]!, title: "Santa Rewritten" },
      ],
      deletes: [records[0]!.id, records[1]!.id],
    });
    const requests = makeRequests(random(32), 20);
    const expected = await Promise.all(requests.map((r) => engine.search("k", "1.1", r)));
    expect(await engine.checkpoint("k", "1.1", 2)).toEqual({ records: 23_999 });
    expect(await Promise.all(requests.map((r) => engine.search("k", "2", r)))).toEqual(expected);
    expect(await engine.get("k", "2", records[0]!.id)).toBeNull();
    expect((await engine.get("k", "2", records[5]!.id))?.title).toBe("Santa Rewritten");
    expect(await engine.get("k", "2", records[7]!.id)).toEqual(records[7]);
    expect(await engine.get("k", "2", "new")).toEqual({ id: "new", title: "Santa Nueva", weight: 5 });
  });

  it("serves searches of the live version while a checkpoint is written", async () => {
    const engine = await openEngine({ dataDir: tempDir() });
    await engine.createIndex("k");
    const records = makeRecords(random(8), 12_000);
    await bulk(engine, "k", 1, records);
    await engine.applyChange("k", {
      version: "1.1",
      parent: "1",
      upserts: [{ id: "z", title: "Santa Zeta", weight: 99_999 }],
      deletes: [],
    });
    const request: SearchRequest = { query: "san", scope: "title", weighted: true, limit: 5 };
    const expected = await engine.search("k", "1.1", request);
    let searchesDuring = 0;
    let done = false;
    const checkpoint = engine.checkpoint("k", "1.1", 2).finally(() => (done = true));
    while (!done) {
      expect(await engine.search("k", "1.1", request)).toEqual(expected);
      searchesDuring++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await checkpoint).toEqual({ records: 12_001 });
    expect(searchesDuring).toBeGreaterThan(1);
    expect(await engine.search("k", "2", request)).toEqual(expected);
  });
});

describe("embedded engine layered checkpoints (versions/layers.ts)", () => {
  // Every checkpoint layered while the records changed since the base stay under half of it.
  const layering = { minBase: 1, maxShare: 0.5 };
  const layeredFiles = async (engine: SearchEngine, major: number) =>
    (await engine.segmentFiles!("k", major)).some((f) => f.name === "base-hidden.bin");
  /** An importMajor fill that copies another engine's files, as replication's download does. */
  const copy = (files: { name: string; path: string }[]) => async (dir: string) => {
    fs.mkdirSync(dir, { recursive: true });
    for (const f of files) fs.copyFileSync(f.path, path.join(dir, f.name));
  };

  /** Ids in code point order by how `version` differs from `base`, as the reference sees it. */
  function expectedDiff(base: Map<string, PreparedRecord>, version: Map<string, PreparedRecord>) {
    const counts = { added: 0, updated: 0, deleted: 0, unchanged: 0 };
    const changes: { id: string; change: string }[] = [];
    for (const id of new Set([...base.keys(), ...version.keys()])) {
      const before = base.get(id)?.record;
      const after = version.get(id)?.record;
      const change =
        before === undefined
          ? "added"
          : after === undefined
            ? "deleted"
            : JSON.stringify(before) === JSON.stringify(after)
              ? "unchanged"
              : "updated";
      counts[change]++;
      if (change !== "unchanged") changes.push({ id, change });
    }
    // Code point order: compared as arrays of code points.
    const codePoints = (s: string) => Array.from(s, (c) => c.codePointAt(0)!);
    changes.sort((a, b) => {
      const x = codePoints(a.id);
      const y = codePoints(b.id);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    });
    return { counts, changes };
  }

  async function wholeDiff(engine: SearchEngine, base: string, version: string) {
    const changes: { id: string; change: string }[] = [];
    let after: string | undefined;
    let counts: unknown;
    do {
      const page = await engine.diff!("k", base, version, { after, limit: 7 });
      counts = page.counts;
      changes.push(...page.changes);
      after = page.next;
    } while (after !== undefined);
    return { counts, changes };
  }

  it.each([
    ["default strategies", {}],
    ["indexes read into the heap instead of mapped", { mapSegments: false }],
    ["totals exact only up to 3 matches", { tuning: { exactTotalUpTo: 3 } }],
    ["nearest-first and exact intersections everywhere", { tuning: { smallStream: 0, exactIntersection: 0 } }],
  ] as [string, Partial<EmbeddedEngineOptions>][])(
    "%s: searches, reads, counts and diffs equal the reference, after a reopen too",
    async (_name, options) => {
      const rand = random(23);
      const records = makeRecords(rand, 400);
      const fresh = makeRecords(rand, 400, "new-");
      const dataDir = tempDir();
      let engine = await openEngine({ dataDir, ...options, layering });
      await engine.createIndex("k");
      await bulk(engine, "k", 1, records);
      const states = new Map<string, Map<string, PreparedRecord>>([
        ["1", new Map(records.map((r) => [r.id, prepareRecord(r)]))],
      ]);
      const upTo = options.tuning?.exactTotalUpTo;
      let parent = "1";
      let major = 1;
      let minor = 0;
      let written = 0;
      /** `n` changes on the chain: a new record, an old one changed, one deleted (some twice). */
      const writeChanges = async (n: number) => {
        for (let i = 0; i < n; i++, written++) {
          const state = new Map(states.get(parent)!);
          const old = records[(written * 7) % records.length]!;
          const upserts = [fresh[written]!, { ...old, title: `${old.title} santa`, weight: 7000 + written }];
          const deletes = [records[(written * 13 + 5) % records.length]!.id];
          if (written > 0 && written % 4 === 0) deletes.push(fresh[written - 1]!.id);
          for (const id of deletes) state.delete(id);
          for (const r of upserts) state.set(r.id, prepareRecord(r));
          const version = `${major}.${++minor}`;
          await engine.applyChange("k", { version, parent, upserts, deletes });
          states.set(version, state);
          parent = version;
        }
      };
      const expectVersion = async (version: string, requests: number) => {
        const state = states.get(version)!;
        expect(await engine.count("k", version)).toBe(state.size);
        await expectSameAsReference(engine, "k", version, state, makeRequests(rand, requests), upTo);
        for (const id of [...records.slice(0, 60).map((r) => r.id), ...fresh.slice(0, written + 2).map((r) => r.id)]) {
          expect(await engine.get("k", version, id), `${version} ${id}`).toEqual(state.get(id)?.record ?? null);
        }
      };

      // Changes, then a checkpoint of them: layered on major 1's segment. Then again: the same
      // base, the delta rewritten with the changes since. Then so many that a plain segment is
      // made again.
      for (const [changes, layered] of [
        [15, true],
        [15, true],
        [80, false],
        [5, true],
      ] as const) {
        await writeChanges(changes);
        const from = parent;
        major++;
        minor = 0;
        expect(await engine.checkpoint("k", from, major)).toEqual({ records: states.get(from)!.size });
        expect(await layeredFiles(engine, major), `major ${major}`).toBe(layered);
        states.set(String(major), states.get(from)!);
        parent = String(major);
        await expectVersion(String(major), 40);
        // Minors on top of the checkpoint hide its documents across both segments.
        await writeChanges(3);
        await expectVersion(parent, 30);
        expect(await wholeDiff(engine, String(major), parent)).toEqual(
          expectedDiff(states.get(String(major))!, states.get(parent)!),
        );
      }
      // Diffs across majors: plain against layered, layered against layered, and a minor against
      // a major it does not descend from.
      for (const [base, version] of [
        ["1", "2"],
        ["2", "3"],
        ["3", "2"],
        ["4", "5"],
        ["2", "5.3"],
      ] as const) {
        expect(await wholeDiff(engine, base, version), `${base} -> ${version}`).toEqual(
          expectedDiff(states.get(base)!, states.get(version)!),
        );
      }

      await engine.close();
      engines.length = 0;
      engine = await openEngine({ dataDir, ...options, layering });
      for (const version of ["2", "3.2", "5", "5.3"]) await expectVersion(version, 20);
    },
  );

  it("opens a layered major's files on another engine, which serves it alike", async () => {
    const rand = random(29);
    const records = makeRecords(rand, 300);
    const engine = await openEngine({ dataDir: tempDir(), layering });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, records);
    const changed = { ...records[3]!, title: "changed santa" };
    await engine.applyChange("k", { version: "1.1", parent: "1", upserts: [changed], deletes: [records[4]!.id] });
    await engine.checkpoint("k", "1.1", 2);
    const files = await engine.segmentFiles!("k", 2);
    expect(files.map((f) => f.name).sort()).toEqual([
      "base-hidden.bin",
      "base-index.bin",
      "base-records.bin",
      "base-ref.json",
      "index.bin",
      "records.bin",
    ]);

    const other = await openEngine({ dataDir: tempDir(), layering });
    await other.createIndex("k");
    await other.importMajor!("k", { major: 2, parent: null, records: 299 }, copy(files));
    const content = new Map(records.map((r) => [r.id, prepareRecord(r)]));
    content.delete(records[4]!.id);
    content.set(changed.id, prepareRecord(changed));
    await expectSameAsReference(other, "k", "2", content, makeRequests(rand, 60));
    expect(await other.count("k", "2")).toBe(299);
  });

  it("imports a layered major without its base, linked from the engine's own copy of that segment (D-353)", async () => {
    const rand = random(37);
    const records = makeRecords(rand, 300);
    const engine = await openEngine({ dataDir: tempDir(), layering });
    await engine.createIndex("k");
    await bulk(engine, "k", 1, records);
    const changed = { ...records[5]!, title: "changed santa" };
    await engine.applyChange("k", { version: "1.1", parent: "1", upserts: [changed], deletes: [records[6]!.id] });
    await engine.checkpoint("k", "1.1", 2);
    const published = await engine.segmentFiles!("k", 2, { withoutBase: true });
    expect(published.map((f) => f.name).sort()).toEqual([
      "base-hidden.bin",
      "base-ref.json",
      "index.bin",
      "records.bin",
    ]);
    // A plain major is published whole either way.
    expect(await engine.segmentFiles!("k", 1, { withoutBase: true })).toEqual(await engine.segmentFiles!("k", 1));

    // Another node that holds major 1 (imported, as replication does) links it as the base.
    const other = await openEngine({ dataDir: tempDir(), layering });
    await other.createIndex("k");
    await other.importMajor!("k", { major: 1, parent: null, records: 300 }, copy(await engine.segmentFiles!("k", 1)));
    await other.importMajor!("k", { major: 2, parent: "1.1", records: 299 }, copy(published));
    const content = new Map(records.map((r) => [r.id, prepareRecord(r)]));
    content.delete(records[6]!.id);
    content.set(changed.id, prepareRecord(changed));
    await expectSameAsReference(other, "k", "2", content, makeRequests(rand, 60));
    const linked = await other.segmentFiles!("k", 2);
    expect(linked.map((f) => f.name)).toContain("base-index.bin");
    expect(fs.statSync(linked.find((f) => f.name === "base-index.bin")!.path).nlink).toBeGreaterThan(1);

    // The next checkpoint keeps that base, and names it so that the other node finds it again,
    // now as the base of its own layered major 2.
    await engine.applyChange("k", { version: "2.1", parent: "2", upserts: [], deletes: [records[7]!.id] });
    await engine.checkpoint("k", "2.1", 3);
    await engine.dropVersion("k", "1");
    await other.dropVersion("k", "1");
    const third = await engine.segmentFiles!("k", 3, { withoutBase: true });
    await other.importMajor!("k", { major: 3, parent: "2.1", records: 298 }, copy(third));
    content.delete(records[7]!.id);
    await expectSameAsReference(other, "k", "3", content, makeRequests(rand, 30));

    // A node without that segment refuses the major, and keeps nothing of it.
    const bare = await openEngine({ dataDir: tempDir(), layering });
    await bare.createIndex("k");
    await expect(bare.importMajor!("k", { major: 3, parent: null, records: 298 }, copy(third))).rejects.toBeInstanceOf(
      MissingBaseError,
    );
    expect(await bare.has!("k", "3")).toBe(false);
    // Nor does a node whose segment of that number is another one (rebuilt by a purge elsewhere).
    await bare.importMajor!("k", { major: 2, parent: null, records: 299 }, copy(await engine.segmentFiles!("k", 3)));
    await bare.purge!("k", records[8]!.id);
    await expect(bare.importMajor!("k", { major: 4, parent: null, records: 297 }, copy(third))).rejects.toBeInstanceOf(
      MissingBaseError,
    );
  });

  it("purges a record from a layered major's base and delta, and from the major its base came from", async () => {
    const rand = random(31);
    const dataDir = tempDir();
    const engine = await openEngine({ dataDir, layering });
    await engine.createIndex("k");
    const secret = { id: "secret", title: "santa", data: { note: "purgeoldcopyqx" } };
    await bulk(engine, "k", 1, [...makeRecords(rand, 200), secret]);
    // The base keeps the old copy (hidden), the delta has the new one.
    const updated = { ...secret, data: { note: "purgenewcopyqx" } };
    await engine.applyChange("k", { version: "1.1", parent: "1", upserts: [updated], deletes: [] });
    await engine.checkpoint("k", "1.1", 2);
    expect(await layeredFiles(engine, 2)).toBe(true);
    const holds = (text: string) =>
      fs
        .readdirSync(dataDir, { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .some((e) => fs.readFileSync(path.join(e.parentPath, e.name)).includes(text));
    expect(holds("purgeoldcopyqx")).toBe(true);

    const result = await engine.purge!("k", "secret");
    expect(result.found).toBe(true);
    expect(result.changed).toEqual([
      { version: "1", records: 200 },
      { version: "1.1", records: 200 },
      { version: "2", records: 200 },
    ]);
    for (const version of ["1", "1.1", "2"]) {
      expect(await engine.get("k", version, "secret")).toBeNull();
      const page = await engine.search("k", version, { query: "santa", scope: "all", weighted: true, limit: 300 });
      expect(page.hits.map((h) => h.record.id)).not.toContain("secret");
    }
    await engine.sync!();
    expect(holds("purgeoldcopyqx")).toBe(false);
    expect(holds("purgenewcopyqx")).toBe(false);
  });
});
