// Benchmark datasets: the real cities list and a deterministic synthetic catalogue. The synthetic
// set is generated on the fly in batches (never held whole) so 10M records fit in a Node heap.
import { cityRecords as allCityRecords } from "../server/src/demo/cities.ts";
import type { SearchRecord } from "../server/src/ports/engine.ts";
import { random } from "../server/test/support/random.ts";

/**
 * The cities in the compact shape the benchmarks have always used (5-decimal coordinates, country
 * and population as data): the same records as earlier runs, so figures stay comparable.
 */
export function cityRecords(): SearchRecord[] {
  return allCityRecords({ compact: true });
}

/** The same seed gives the same dataset everywhere (mulberry32, shared with the tests). */
export const prng = random;

/** Samples ranks 0..n-1 with probability proportional to 1/(rank+1)^s (word frequencies in text). */
function zipfSampler(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) cdf[i] = sum += 1 / (i + 1) ** s;
  return () => {
    const x = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const ONSETS = [
  "",
  "b",
  "c",
  "d",
  "f",
  "g",
  "h",
  "j",
  "k",
  "l",
  "m",
  "n",
  "p",
  "r",
  "s",
  "t",
  "v",
  "w",
  "z",
  "br",
  "ch",
  "cl",
  "dr",
  "fl",
  "gr",
  "pl",
  "sh",
  "st",
  "tr",
  "th",
];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y"];
const CODAS = ["", "", "", "n", "r", "s", "l", "t", "m", "nd", "rk", "st"];

function makeVocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  const pick = (xs: string[]) => xs[Math.floor(random() * xs.length)]!;
  while (words.size < size) {
    const syllables = 1 + Math.floor(random() * 3.2);
    let w = "";
    for (let i = 0; i < syllables; i++) w += pick(ONSETS) + pick(VOWELS) + pick(CODAS);
    if (w.length >= 2) words.add(w);
  }
  // Shuffle so that frequency rank is unrelated to spelling.
  const list = [...words];
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

const COLORS = [
  "red",
  "blue",
  "green",
  "black",
  "white",
  "grey",
  "silver",
  "gold",
  "pink",
  "brown",
  "orange",
  "purple",
];

/**
 * A product/place-like catalogue: 2–5 word titles drawn from a Zipf vocabulary of 60k words,
 * log-uniform weights (85% of records; many ties at small weights), clustered coordinates (75%),
 * and a nested `data` object with text, numeric and boolean fields.
 */
export function* syntheticRecords(count: number, batchSize = 10_000, seed = 42): Generator<SearchRecord[]> {
  const random = prng(seed);
  const vocabulary = makeVocabulary(60_000, random);
  const word = zipfSampler(vocabulary.length, 1.0, random);
  const categories = vocabulary.slice(0, 40);
  const category = zipfSampler(categories.length, 0.8, random);
  const centers = Array.from({ length: 3000 }, () => ({
    lat: -45 + random() * 110,
    lon: -180 + random() * 360,
  }));
  const center = zipfSampler(centers.length, 0.9, random);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

  let batch: SearchRecord[] = [];
  for (let i = 0; i < count; i++) {
    const n = 2 + Math.floor(random() * random() * 4.5);
    const words: string[] = [];
    for (let j = 0; j < n; j++) words.push(vocabulary[word()]!);
    const title = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join(" ");
    const record: SearchRecord = {
      id: `r${i}`,
      title,
      data: {
        category: categories[category()],
        brand: vocabulary[word()],
        price: Math.round(random() * 100_000) / 100,
        inStock: random() < 0.6,
        tags: [vocabulary[word()], vocabulary[word()]],
        details: { color: COLORS[Math.floor(random() * COLORS.length)], rating: 1 + Math.floor(random() * 5) },
      },
    };
    if (random() < 0.85) record.weight = Math.max(1, Math.floor(Math.exp(random() * Math.log(1_000_000))));
    if (random() < 0.75) {
      const c = centers[center()]!;
      const lat = Math.max(-89.9, Math.min(89.9, c.lat + gauss() * 0.4));
      let lon = c.lon + gauss() * 0.4;
      if (lon > 180) lon -= 360;
      if (lon < -180) lon += 360;
      record.latitude = lat.toFixed(5);
      record.longitude = lon.toFixed(5);
    }
    batch.push(record);
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

export const DATASET_SIZES: Record<string, number> = { "1m": 1_000_000, "10m": 10_000_000 };

/** A dataset by name ("cities", "1m", "10m") in batches of 10,000 records. */
export function* datasetBatches(dataset: string): Generator<SearchRecord[]> {
  if (dataset === "cities") {
    const all = cityRecords();
    for (let i = 0; i < all.length; i += 10_000) yield all.slice(i, i + 10_000);
    return;
  }
  const size = DATASET_SIZES[dataset];
  if (size === undefined) throw new Error(`unknown dataset ${dataset}`);
  yield* syntheticRecords(size);
}
