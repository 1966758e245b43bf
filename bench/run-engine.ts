// One engine on one dataset, in its own process (so memory figures are its own and a peer that
// runs out of memory cannot take the benchmark down). Spawned by search.bench.ts:
//   node --expose-gc run-engine.ts <engine> <dataset> <queries.json> <result.json> <peerSeconds> [<peerTypoSeconds>]
import fs from "node:fs";
import path from "node:path";
import type { SearchEngine, SearchRequest } from "../server/src/ports/engine.ts";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import { haversineMeters } from "../server/src/engine/embedded/columns/geo.ts";
import { TopK } from "../server/src/engine/embedded/search/top-k.ts";
import {
  compareScores,
  prepareRecord,
  queryTokens,
  scoreRecord,
  toHits,
  withoutTyposIfExact,
  type ReferenceScore,
} from "../server/test/engine/reference.ts";
import { datasetBatches } from "./datasets.ts";
import {
  SIFT_PASSES,
  directoryBytes,
  filesNamed,
  memoryDelta,
  percentile,
  settledMemory,
  type EngineResult,
  type TypoAnswer,
} from "./measure.ts";
import { createPeer, type PeerDoc } from "./peers.ts";
import { MODES, QUERY_CLASSES, isTypoClass, matchesIntended, type BenchQuery } from "./queries.ts";

const INDEX = "bench";

async function runEmbedded(dataset: string, queries: BenchQuery[]): Promise<EngineResult> {
  const dataDir = path.join(import.meta.dirname, "data", `engine-${dataset}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const before = settledMemory();
  let engine = createEmbeddedEngine({ dataDir });
  await engine.open();
  await engine.createIndex(INDEX);
  // Build time counts the engine's work only, not generating the records.
  let buildMs = 0;
  const timed = async <T>(work: () => Promise<T>) => {
    const t0 = performance.now();
    const result = await work();
    buildMs += performance.now() - t0;
    return result;
  };
  const writer = await timed(() => engine.bulkWriter(INDEX, 1));
  let records = 0;
  let sourceBytes = 0;
  for (const batch of datasetBatches(dataset)) {
    for (const r of batch) sourceBytes += Buffer.byteLength(JSON.stringify(r));
    records += batch.length;
    await timed(() => writer.add(batch));
  }
  await timed(() => writer.commit());
  const memory = memoryDelta(settledMemory(), before);
  const diskBytes = directoryBytes(dataDir);
  const mappedBytes = filesNamed(dataDir, "index.bin");
  log(`${dataset}: built ${records} in ${(buildMs / 1000).toFixed(1)} s`);

  // Several passes: a p99 of 100 timings is the second-slowest, which one pause of the machine
  // decides; five passes give 500 timings per cell, every one of them kept.
  const timings = await timeQueries(queries, (r) => engine.search(INDEX, "1", r));
  const moreTimings: number[][] = [];
  for (let pass = 1; pass < SIFT_PASSES; pass++)
    moreTimings.push((await timeQueries(queries, (r) => engine.search(INDEX, "1", r), Infinity, false)) as number[]);
  const verification = await verify(engine, dataset, queries, dataset === "10m" ? 24 : 60);
  log(
    `${dataset}: verified ${verification.checked} queries (${verification.typoChecked} typo), ${verification.mismatches} mismatches (${verification.typoMismatches} typo)`,
  );
  // What the typo queries found, outside the timings.
  const typoAnswers: (TypoAnswer | null)[] = [];
  for (const q of queries) {
    if (!isTypoClass(q.cls) || q.intended === undefined) {
      typoAnswers.push(null);
      continue;
    }
    const { hits } = await engine.search(INDEX, "1", q.request);
    typoAnswers.push({ hits: hits.length, intended: hits.some((h) => matchesIntended(q.intended!, h.record.title)) });
  }

  // Record-level writes on the big index: each creates a minor version, durable before it resolves.
  const putTimes: number[] = [];
  const samples = [...datasetBatches(dataset).next().value!.slice(0, 300)];
  let parent = "1";
  for (let i = 0; i < samples.length; i++) {
    const version = `1.${i + 1}`;
    const record = { ...samples[i]!, title: `${samples[i]!.title} renamed ${i}` };
    const change = i % 10 === 9 ? { upserts: [], deletes: [record.id] } : { upserts: [record], deletes: [] };
    const t0 = performance.now();
    await engine.applyChange(INDEX, { version, parent, ...change });
    putTimes.push(performance.now() - t0);
    parent = version;
  }
  const minorQueries = queries.slice(0, 2000);
  const minorAll = await timeQueries(minorQueries, (r) => engine.search(INDEX, parent, r));
  // Exact and typo queries apart too: a typo query costs more, in the segment and in the overlay.
  const minorOf = (typo: boolean | null) =>
    minorAll.filter((t, i): t is number => t !== null && (typo === null || isTypoClass(minorQueries[i]!.cls) === typo));
  const minorTimes = minorOf(null);
  const minorFigures = (times: number[]) => ({ p50: percentile(times, 0.5), p99: percentile(times, 0.99) });

  await engine.close();
  const reloadStart = performance.now();
  engine = createEmbeddedEngine({ dataDir });
  await engine.open();
  await engine.search(INDEX, parent, queries[0]!.request);
  const reloadMs = performance.now() - reloadStart;

  let checkpointMs: number | undefined;
  if (dataset !== "10m") {
    const t0 = performance.now();
    await engine.checkpoint(INDEX, parent, 2);
    checkpointMs = performance.now() - t0;
  }
  await engine.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  return {
    engine: "Sift embedded",
    dataset,
    records,
    sourceBytes,
    buildMs,
    memory,
    mappedBytes,
    diskBytes,
    timings,
    moreTimings,
    verification,
    typoAnswers,
    put: { count: putTimes.length, p50: percentile(putTimes, 0.5), p99: percentile(putTimes, 0.99) },
    searchOnMinor: {
      changes: putTimes.length,
      ...minorFigures(minorTimes),
      exact: minorFigures(minorOf(false)),
      typo: minorFigures(minorOf(true)),
    },
    reloadMs,
    checkpointMs,
  };
}

/**
 * Times each query once after a warm-up pass (JIT, first touches of the index): the whole list
 * for Sift, which takes about a second; for a peer at most a quarter of its budget, since one of
 * its queries can take seconds. The first query is timed even when the budget is already spent.
 */
async function timeQueries(
  queries: BenchQuery[],
  run: (request: SearchRequest) => Promise<unknown>,
  budgetMs = Infinity,
  warmUp = true,
): Promise<(number | null)[]> {
  const deadline = performance.now() + budgetMs;
  for (const q of warmUp ? queries : []) {
    if (performance.now() > deadline - budgetMs * 0.75) break;
    await run(q.request);
  }
  const timings: (number | null)[] = [];
  for (const q of queries) {
    // At least one query is timed, however long the warm-up took, so every peer has a figure.
    if (performance.now() > deadline && timings.length > 0) {
      timings.push(null);
      continue;
    }
    const t0 = performance.now();
    await run(q.request);
    timings.push(performance.now() - t0);
  }
  return timings;
}

/**
 * Compares the engine's answers with a brute-force pass over the whole dataset, on `count`
 * queries spread over every class, typo classes included: the reference decides what a typo
 * query matches (server/test/engine/reference.ts).
 */
async function verify(engine: SearchEngine, dataset: string, queries: BenchQuery[], count: number) {
  // Every (class, mode) cell, the classes first, so that even fewer queries than cells see every class.
  const cells = MODES.flatMap((mode) =>
    QUERY_CLASSES.map((cls) => queries.filter((q) => q.cls === cls && q.mode === mode)),
  );
  const rounds = Math.ceil(count / cells.length);
  const sample = Array.from({ length: rounds }, (_, j) =>
    cells.flatMap((cell) => (cell.length > 0 ? [cell[Math.floor((j * cell.length) / rounds)]!] : [])),
  )
    .flat()
    .slice(0, count);
  const tops = sample.map((q) => ({
    q,
    tokens: queryTokens(q.request),
    top: new TopK<ReferenceScore>(q.request.limit, compareScores(q.request.weighted)),
  }));
  for (const batch of datasetBatches(dataset)) {
    for (const record of batch) {
      const prepared = prepareRecord(record);
      for (const t of tops) {
        const score = scoreRecord(prepared, t.tokens, t.q.request);
        if (score !== null) t.top.offer(score);
      }
    }
  }
  const examples: string[] = [];
  let mismatches = 0;
  let typoMismatches = 0;
  for (const t of tops) {
    const expected = toHits(withoutTyposIfExact(t.top.sorted()));
    const { hits: got } = await engine.search(INDEX, "1", t.q.request);
    const same =
      got.length === expected.length &&
      got.every(
        (h, i) =>
          h.record.id === expected[i]!.id &&
          Math.abs((h.distanceMeters ?? -1) - (expected[i]!.distanceMeters ?? -1)) < 0.01,
      );
    if (!same) {
      mismatches++;
      if (isTypoClass(t.q.cls)) typoMismatches++;
      if (examples.length < 5)
        examples.push(
          `${JSON.stringify(t.q.request)}: got ${got.map((h) => h.record.id)} expected ${expected.map((e) => e.id)}`,
        );
    }
  }
  const typoChecked = tops.filter((t) => isTypoClass(t.q.cls)).length;
  return { checked: tops.length, mismatches, typoChecked, typoMismatches, examples };
}

async function runPeer(
  name: string,
  dataset: string,
  queries: BenchQuery[],
  budgetSeconds: number,
  typoBudgetSeconds: number,
): Promise<EngineResult> {
  const before = settledMemory();
  const peer = createPeer(name);
  // What the harness needs to rank a peer's matches (the peer's own stored fields would do the same).
  const weight: number[] = [];
  const lat: number[] = [];
  const lon: number[] = [];
  let buildMs = 0;
  let records = 0;
  let sourceBytes = 0;
  for (const batch of datasetBatches(dataset)) {
    const docs = batch.map((r) => {
      const i = records++;
      sourceBytes += Buffer.byteLength(JSON.stringify(r));
      weight[i] = r.weight ?? 0;
      lat[i] = r.latitude !== undefined ? Number(r.latitude) : NaN;
      lon[i] = r.longitude !== undefined ? Number(r.longitude) : NaN;
      return { i, title: r.title, weight: r.weight ?? 0 };
    });
    const t0 = performance.now();
    await peer.add(docs);
    buildMs += performance.now() - t0;
  }
  const memory = memoryDelta(settledMemory(), before);
  log(`${dataset}: ${peer.name} built in ${(buildMs / 1000).toFixed(1)} s`);

  // Typo queries' answers, kept to report what each peer finds (the last answer to a request wins).
  const answers = new Map<SearchRequest, { ids: number[]; matches: number }>();
  const rank = async (request: SearchRequest, typos: boolean): Promise<number[]> => {
    if (request.weighted && !request.geo && peer.topByWeight) {
      const top = await peer.topByWeight(request.query, request.limit, typos);
      if (typos) answers.set(request, { ids: top.ids, matches: top.count });
      return top.ids;
    }
    const geo = request.geo;
    const distance = (i: number) =>
      geo && !Number.isNaN(lat[i]!) ? haversineMeters(geo.latitude, geo.longitude, lat[i]!, lon[i]!) : Infinity;
    const top = new TopK<{ i: number; w: number; d: number }>(
      request.limit,
      (a, b) => (request.weighted ? b.w - a.w : 0) || a.d - b.d || a.i - b.i,
    );
    const found = await peer.matches(request.query, records, typos);
    for (const i of found) top.offer({ i, w: weight[i]!, d: distance(i) });
    const ids = top.sorted().map((x) => x.i);
    if (typos) answers.set(request, { ids, matches: found.length });
    return ids;
  };

  // Exact and typo queries are timed apart, each within a budget of its own: the exact ones run
  // exactly as they did before typo queries existed (same queries, settings, order and budget).
  const timings = new Array<number | null>(queries.length).fill(null);
  const timeSubset = async (typos: boolean, seconds: number) => {
    const at = queries.flatMap((q, i) => (isTypoClass(q.cls) === typos ? [i] : []));
    const times = await timeQueries(
      at.map((i) => queries[i]!),
      (r) => rank(r, typos),
      seconds * 1000,
    );
    at.forEach((i, j) => {
      timings[i] = times[j]!;
    });
    return at.length;
  };
  await timeSubset(false, budgetSeconds);

  let typoIndex: EngineResult["typoIndex"];
  const hasTypoQueries = queries.some((q) => isTypoClass(q.cls));
  if (hasTypoQueries && peer.addForTypos) {
    const typoBefore = settledMemory();
    let typoBuildMs = 0;
    let i = 0;
    for (const batch of datasetBatches(dataset)) {
      const docs: PeerDoc[] = batch.map((r) => ({ i: i++, title: r.title, weight: r.weight ?? 0 }));
      const t0 = performance.now();
      await peer.addForTypos(docs);
      typoBuildMs += performance.now() - t0;
    }
    typoIndex = { buildMs: typoBuildMs, memory: memoryDelta(settledMemory(), typoBefore) };
    log(`${dataset}: ${peer.name} typo index built in ${(typoBuildMs / 1000).toFixed(1)} s`);
  }
  if (hasTypoQueries) await timeSubset(true, typoBudgetSeconds);

  // Titles of the typo queries' top hits, to tell whether they hold what the person meant.
  const wanted = new Set<number>();
  queries.forEach((q, i) => {
    if (timings[i] !== null && isTypoClass(q.cls)) for (const id of answers.get(q.request)?.ids ?? []) wanted.add(id);
  });
  const titles = new Map<number, string>();
  if (wanted.size > 0) {
    let i = 0;
    for (const batch of datasetBatches(dataset)) {
      for (const r of batch) {
        if (wanted.has(i)) titles.set(i, r.title);
        i++;
      }
    }
  }
  const typoAnswers = queries.map((q, i): TypoAnswer | null => {
    const answer = answers.get(q.request);
    if (timings[i] === null || !isTypoClass(q.cls) || q.intended === undefined || !answer) return null;
    return {
      hits: answer.ids.length,
      matches: answer.matches,
      intended: answer.ids.some((id) => matchesIntended(q.intended!, titles.get(id) ?? "")),
    };
  });
  return {
    engine: peer.name,
    dataset,
    records,
    sourceBytes,
    buildMs,
    memory,
    timings,
    typoAnswers,
    typoOption: peer.typoOption,
    typoIndex,
  };
}

function log(message: string): void {
  process.stderr.write(`  ${message}\n`);
}

const [engineName, datasetName, queriesFile, resultFile, budget, typoBudget] = process.argv.slice(2);
const benchQueries = JSON.parse(fs.readFileSync(queriesFile!, "utf8")) as BenchQuery[];
const result =
  engineName === "embedded"
    ? await runEmbedded(datasetName!, benchQueries)
    : await runPeer(engineName!, datasetName!, benchQueries, Number(budget), Number(typoBudget ?? budget));
fs.writeFileSync(resultFile!, JSON.stringify(result));
