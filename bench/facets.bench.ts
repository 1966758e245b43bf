// Facets, string filters and totals (issue 16): the embedded engine next to MiniSearch and Orama
// on a synthetic catalogue with a 200-value and a 10,000-value string field, and the cost of
// totalHits on the existing 1M query mix. Figures go to RESULTS.md by hand (see its section).
//
//   node --expose-gc facets.bench.ts --part=facets [--records=1000000] [--peers=minisearch,orama]
//        [--skip=orama:string]   (a peer's cell by the first word of its name)
//   node --expose-gc facets.bench.ts --part=mix --label=after     the 1M query mix (queries.ts), 5 passes
//        [--ab] [--keep] [--reuse] [--min=7]   --min: each query's fastest of 7 runs per engine
//        (the engines taking turns), percentiles over queries: robust to a shared machine's load
//   BENCH_10M=1 node --expose-gc facets.bench.ts --part=facets --peers=   10M records, Sift only
//
// Facet records: titles "Item <word> <word> decile<d> centile<cc>", so the query "decile3" matches
// 10% of records and "centile42" 1% (two digits: "centile4" would prefix ten of them); data.store has 200 values, data.sku 10,000 (both uniform),
// data.price a number. Each query class is run over its 10 (or 100) variants in turn.
import fs from "node:fs";
import path from "node:path";
import MiniSearch from "minisearch";
import { create, insertMultiple, search, type Orama } from "@orama/orama";
import type { SearchEngine, SearchRecord, SearchRequest } from "../server/src/ports/engine.ts";
import { createEmbeddedEngine } from "../server/src/engine/embedded/index.ts";
import { openSegmentFile } from "../server/src/engine/embedded/segment/segment-file.ts";
import { parseFilter } from "../server/src/search/filter.ts";
import { prng, syntheticRecords } from "./datasets.ts";
import { percentile, settledMemory } from "./measure.ts";
import { EXACT_CLASSES, makeQueries } from "./queries.ts";

const args = new Map(
  process.argv.slice(2).map((a) => {
    const [key, value] = a.replace(/^--/, "").split("=");
    return [key!, value ?? "true"] as const;
  }),
);
const part = args.get("part") ?? "facets";
const records = Number(args.get("records") ?? (process.env.BENCH_10M === "1" ? 10_000_000 : 1_000_000));
const peers = (args.get("peers") ?? (records > 1_000_000 ? "" : "minisearch,orama")).split(",").filter(Boolean);
const label = args.get("label") ?? "run";
const skip = new Set((args.get("skip") ?? "").split(",").filter(Boolean));
const peerSeconds = Number(args.get("peer-seconds") ?? 20);
const dataDir = path.join(import.meta.dirname, "data");
const INDEX = "bench";
const log = (line: string) => console.error(`[facets.bench] ${line}`);

const STORES = 200;
const SKUS = 10_000;

function* facetRecords(count: number): Generator<SearchRecord[]> {
  const random = prng(7);
  const syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "be"];
  const word = () =>
    Array.from({ length: 2 + Math.floor(random() * 3) }, () => syllables[Math.floor(random() * 12)]).join("");
  let batch: SearchRecord[] = [];
  for (let i = 0; i < count; i++) {
    batch.push({
      id: `f${i}`,
      title: `Item ${word()} ${word()} decile${i % 10} centile${String(Math.floor(i / 10) % 100).padStart(2, "0")}`,
      weight: Math.floor(random() * 1000),
      data: {
        store: `store-${Math.floor(random() * STORES)}`,
        sku: `sku-${Math.floor(random() * SKUS)}`,
        price: Math.round(random() * 10_000) / 100,
      },
    });
    if (batch.length === 10_000) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

interface Cell {
  name: string;
  requests: SearchRequest[];
  /** Timed on Sift only (the peers' adapters here do not sort). */
  siftOnly?: boolean;
}

function facetCells(): Cell[] {
  const facets = [
    { path: ["store"], maxValues: 10 },
    { path: ["sku"], maxValues: 10 },
  ];
  const base = { scope: "title" as const, weighted: true, limit: 10 };
  const random = prng(11);
  return [
    {
      name: "facets store+sku, query matching 10%",
      requests: Array.from({ length: 10 }, (_, d) => ({ ...base, query: `decile${d}`, facets })),
    },
    {
      name: "facets store+sku, query matching 1%",
      requests: Array.from({ length: 100 }, (_, c) => ({
        ...base,
        query: `centile${String(c).padStart(2, "0")}`,
        facets,
      })),
    },
    {
      name: "string filter keeping 1% (store IN 2 of 200), query matching all",
      requests: Array.from({ length: 100 }, () => {
        const a = Math.floor(random() * STORES);
        const b = (a + 1 + Math.floor(random() * (STORES - 1))) % STORES;
        return { ...base, query: "item", filter: parseFilter(`data.store IN ["store-${a}", "store-${b}"]`) };
      }),
    },
    {
      name: "sort by price asc, query matching 10%",
      requests: Array.from({ length: 10 }, (_, d) => ({
        ...base,
        query: `decile${d}`,
        sort: { path: ["price"], direction: "asc" as const },
      })),
      siftOnly: true,
    },
    {
      name: "sort by price desc, query matching all",
      requests: [{ ...base, query: "item", sort: { path: ["price"], direction: "desc" as const } }],
      siftOnly: true,
    },
  ];
}

/** p50/p99 of `passes` rounds over the requests, after one untimed round. */
async function timeCell(run: (r: SearchRequest) => Promise<unknown>, requests: SearchRequest[], budgetMs = Infinity) {
  // Peers (a budget) warm up on a few requests: a round of 100 match-all queries takes them minutes.
  for (const r of Number.isFinite(budgetMs) ? requests.slice(0, 1) : requests) await run(r);
  const times: number[] = [];
  const started = performance.now();
  const rounds = Math.max(5, Math.ceil(500 / requests.length));
  for (let round = 0; round < rounds && performance.now() - started < budgetMs; round++) {
    for (const r of requests) {
      if (performance.now() - started >= budgetMs) break;
      const t0 = performance.now();
      await run(r);
      times.push(performance.now() - t0);
    }
  }
  return { n: times.length, p50: percentile(times, 0.5), p99: percentile(times, 0.99) };
}

async function buildSift(
  dir: string,
  batches: Generator<SearchRecord[]>,
): Promise<{ engine: SearchEngine; ms: number }> {
  fs.rmSync(dir, { recursive: true, force: true });
  const engine = createEmbeddedEngine({ dataDir: dir });
  await engine.open();
  await engine.createIndex(INDEX);
  const writer = await engine.bulkWriter(INDEX, 1);
  const t0 = performance.now();
  for (const batch of batches) await writer.add(batch);
  await writer.commit();
  return { engine, ms: performance.now() - t0 };
}

/** Bytes of the value-column sections of the given paths in the segment's index.bin. */
async function valueColumnBytes(dir: string, paths: string[][]): Promise<Record<string, number>> {
  const file = fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).find((f) => f.endsWith("index.bin"))!;
  const { meta, sections } = await openSegmentFile(path.join(dir, file), false);
  const valuePaths = (meta as { valuePaths: string[][] }).valuePaths;
  const out: Record<string, number> = {};
  for (const p of paths) {
    const i = valuePaths.findIndex((v) => JSON.stringify(v) === JSON.stringify(p));
    let bytes = 0;
    for (const [name, array] of Object.entries(sections)) {
      if (name.startsWith(`value${i}`) && /^value\d+/.exec(name)![0] === `value${i}`) bytes += array.byteLength;
    }
    out[p.join(".")] = bytes;
  }
  return out;
}

async function runFacets(): Promise<void> {
  const cells = facetCells();
  const result: Record<string, unknown> = { records, date: new Date().toISOString() };
  const dir = path.join(dataDir, `facets-${records}`);
  const { engine, ms } = await buildSift(dir, facetRecords(records));
  log(`sift: built ${records} in ${(ms / 1000).toFixed(1)} s`);
  result.siftBuildMs = ms;
  result.columnBytes = await valueColumnBytes(dir, [["store"], ["sku"]]);
  const sift: Record<string, unknown> = {};
  for (const cell of cells) {
    const page = await engine.search(INDEX, "1", cell.requests[0]!);
    sift[cell.name] = {
      ...(await timeCell((r) => engine.search(INDEX, "1", r), cell.requests)),
      totalHits: page.totalHits,
    };
    log(`sift ${cell.name}: ${JSON.stringify(sift[cell.name])}`);
  }
  result.sift = sift;
  await engine.close();

  for (const peer of peers) {
    const docs: { id: string; title: string; store: string; sku: string }[] = [];
    for (const batch of facetRecords(records))
      for (const r of batch)
        docs.push({ id: r.id, title: r.title, store: r.data!.store as string, sku: r.data!.sku as string });
    const before = settledMemory();
    const t0 = performance.now();
    const run = peer === "minisearch" ? miniSearchPeer(docs) : await oramaPeer(docs);
    const buildMs = performance.now() - t0;
    docs.length = 0;
    const after = settledMemory();
    log(
      `${peer}: built in ${(buildMs / 1000).toFixed(1)} s, heap +${((after.heapUsed - before.heapUsed) / 1e6).toFixed(0)} MB`,
    );
    const figures: Record<string, unknown> = { buildMs };
    for (const cell of cells) {
      // --skip=orama:filter and the like: a cell a peer cannot finish one query of in minutes.
      if (skip.has(`${peer}:${cell.name.split(" ")[0]}`) || cell.siftOnly) continue;
      figures[cell.name] = await timeCell(run, cell.requests, peerSeconds * 1000);
      log(`${peer} ${cell.name}: ${JSON.stringify(figures[cell.name])}`);
    }
    result[peer] = figures;
  }
  fs.writeFileSync(path.join(dataDir, `facets-${records}.json`), JSON.stringify(result, null, 1));
  console.log(JSON.stringify(result, null, 1));
}

type Doc = { id: string; title: string; store: string; sku: string };

/** MiniSearch has no facets: the application counts the stored fields of every match. */
function miniSearchPeer(docs: Doc[]): (r: SearchRequest) => Promise<unknown> {
  const index = new MiniSearch<Doc>({ fields: ["title"], storeFields: ["store", "sku"] });
  index.addAll(docs);
  return async (r) => {
    const wanted = r.filter?.kind === "in" ? new Set(r.filter.values) : null;
    const hits = index.search(r.query, {
      prefix: true,
      combineWith: "AND",
      ...(wanted ? { filter: (h) => wanted.has(h.store) } : {}),
    });
    if (!r.facets) return hits.slice(0, r.limit);
    return r.facets.map((f) => {
      const counts = new Map<string, number>();
      for (const h of hits) counts.set(h[f.path[0]!], (counts.get(h[f.path[0]!]) ?? 0) + 1);
      return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, f.maxValues);
    });
  };
}

async function oramaPeer(docs: Doc[]): Promise<(r: SearchRequest) => Promise<unknown>> {
  const schema = { title: "string", store: "string", sku: "string" } as const;
  const db: Orama<typeof schema> = create({ schema });
  await insertMultiple(db, docs, 10_000);
  return async (r) =>
    search(db, {
      term: r.query,
      properties: ["title"],
      threshold: 0,
      limit: r.limit,
      ...(r.filter?.kind === "in" ? { where: { store: r.filter.values as string[] } } : {}),
      ...(r.facets ? { facets: Object.fromEntries(r.facets.map((f) => [f.path[0]!, { limit: f.maxValues }])) } : {}),
    });
}

/**
 * The existing query mix on the 1M catalogue (queries.ts), exact and typo classes, 5 passes. With
 * --ab, two engines on the same segment take turns per query: one counting totals as shipped, one
 * with exactTotalUpTo 0 (it stops at the first match): the cost of totalHits, same data and moment.
 */
async function runMix(): Promise<void> {
  const dir = path.join(dataDir, `mix-${label}`);
  // --reuse: the segment of an earlier --keep run.
  const built = args.has("reuse")
    ? { engine: createEmbeddedEngine({ dataDir: dir }), ms: 0 }
    : await buildSift(dir, syntheticRecords(1_000_000));
  if (args.has("reuse")) await built.engine.open();
  log(`mix: built in ${(built.ms / 1000).toFixed(1)} s`);
  const ab = args.has("ab");
  const engines: [string, SearchEngine][] = [["shipped", built.engine]];
  if (ab) {
    const off = createEmbeddedEngine({ dataDir: dir, tuning: { exactTotalUpTo: 0 } });
    await off.open();
    engines.push(["no count", off]);
  }
  const samples: SearchRecord[] = [];
  let seen = 0;
  for (const batch of syntheticRecords(1_000_000)) {
    for (const r of batch) if (seen++ % 200 === 0) samples.push(r);
  }
  const queries = makeQueries(samples, 100);
  const exact = (cls: string) => (EXACT_CLASSES as readonly string[]).includes(cls);
  for (const [, engine] of engines) for (const q of queries) await engine.search(INDEX, "1", q.request);
  const times = engines.map(() => ({ exact: [] as number[], typo: [] as number[] }));
  const byClass = engines.map(() => new Map<string, number[]>());
  let inexact = 0;
  // --min=N: per query, the fastest of N runs per engine; a preempted run is never the fastest.
  const minOf = Number(args.get("min") ?? 0);
  if (minOf > 0) {
    for (const [qi, q] of queries.entries()) {
      const best = engines.map(() => Infinity);
      for (let run = 0; run < minOf; run++) {
        for (let k = 0; k < engines.length; k++) {
          const e = (k + qi + run) % engines.length;
          const t0 = performance.now();
          const page = await engines[e]![1].search(INDEX, "1", q.request);
          best[e] = Math.min(best[e]!, performance.now() - t0);
          if (run === 0 && e === 0 && page.totalHitsExact === false) inexact++;
        }
      }
      for (let e = 0; e < engines.length; e++) {
        (exact(q.cls) ? times[e]!.exact : times[e]!.typo).push(best[e]!);
        const cell = `${q.cls} / ${q.mode}`;
        byClass[e]!.set(cell, [...(byClass[e]!.get(cell) ?? []), best[e]!]);
      }
    }
  }
  for (let pass = 0; pass < (minOf > 0 ? 0 : 5); pass++) {
    for (const [qi, q] of queries.entries()) {
      for (let k = 0; k < engines.length; k++) {
        const e = (k + qi + pass) % engines.length;
        const t0 = performance.now();
        const page = await engines[e]![1].search(INDEX, "1", q.request);
        const took = performance.now() - t0;
        (exact(q.cls) ? times[e]!.exact : times[e]!.typo).push(took);
        const cell = `${q.cls} / ${q.mode}`;
        byClass[e]!.set(cell, [...(byClass[e]!.get(cell) ?? []), took]);
        if (pass === 0 && e === 0 && page.totalHitsExact === false) inexact++;
      }
    }
  }
  const figures = (t: number[]) => ({ n: t.length, p50: percentile(t, 0.5), p99: percentile(t, 0.99) });
  const result = {
    label,
    date: new Date().toISOString(),
    timing: minOf > 0 ? `fastest of ${minOf} per query` : "5 passes, every run",
    engines: engines.map(([name], e) => ({
      name,
      exact: figures(times[e]!.exact),
      typo: figures(times[e]!.typo),
      all: figures([...times[e]!.exact, ...times[e]!.typo]),
      cells: Object.fromEntries([...byClass[e]!].map(([cell, t]) => [cell, figures(t)])),
    })),
    queries: queries.length,
    inexactTotals: inexact,
  };
  for (const [, engine] of engines) await engine.close();
  if (!args.has("keep")) fs.rmSync(dir, { recursive: true, force: true });
  fs.writeFileSync(path.join(dataDir, `mix-${label}.json`), JSON.stringify(result, null, 1));
  console.log(JSON.stringify(result, null, 1));
}

fs.mkdirSync(dataDir, { recursive: true });
if (part === "mix") await runMix();
else await runFacets();
