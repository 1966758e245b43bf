// The split posting sections of a segment (title terms and prefixes: offsets, weight, length and
// geo orders), written a window of keys at a time from the forward index read back from the segment
// file, so that a posting section larger than the memory a build may use is never whole in memory
// (docs/engine.md E12, E13).
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { PREFIX_POSTINGS, SECTIONS, TITLE_POSTINGS, type SplitPostingSections } from "../segment/sections.ts";
import type { TermPrefixes } from "../termdict/term-dict-writer.ts";
import { release } from "../util/arrays.ts";
import type { Pacer } from "../util/pacer.ts";
import { RunSorter, longestRun, splitIntoWindows } from "./windows.ts";

const NONE = 0xffff_ffff;

/** The length and geo orders of the documents (the weight order is the document numbering itself). */
export interface DocOrders {
  n: number;
  /** Each document's length rank (sections.ts: what the ranks sections hold). */
  docToLengthRank: Uint32Array;
  /** Each document's position in the geo order, NONE without coordinates; null when none has any. */
  geoPosition: Uint32Array | null;
}

export function docOrders(n: number, docToLengthRank: Uint32Array, geoDocs: Uint32Array): DocOrders {
  if (geoDocs.length === 0) return { n, docToLengthRank, geoPosition: null };
  const geoPosition = new Uint32Array(n).fill(NONE);
  for (let g = 0; g < geoDocs.length; g++) geoPosition[geoDocs[g]!] = g;
  return { n, docToLengthRank, geoPosition };
}

export type Emit = (key: number, atStart: boolean) => void;
/** Emits the keys of one document whose title terms are tokens[from, to) (it may leave out keys outside [low, high)). */
type KeysOf = (tokens: Uint32Array, from: number, to: number, emit: Emit, low: number, high: number) => void;

/** Documents read back from the forward index at a time. */
const SCAN_DOCS = 1 << 18;

/**
 * Visits every document in document order with its title terms, read back from the forward index
 * already written (forwardOffsets, forwardTerms) a chunk at a time: sequential reads of the page cache,
 * instead of 16 bytes per record held in memory through every posting pass.
 */
async function scanTitles(
  out: SegmentFileWriter,
  n: number,
  pacer: Pacer,
  visit: (doc: number, tokens: Uint32Array, from: number, to: number) => void,
): Promise<void> {
  // Sized for the segment when it is small (a checkpoint of a few thousand records): zeroing and
  // collecting 5 MB per build was a large part of a small build's time.
  const offsets = new Uint32Array(Math.min(SCAN_DOCS, n) + 1);
  let tokens = new Uint32Array(Math.min(SCAN_DOCS, n) * 4);
  for (let first = 0; first < n; first += SCAN_DOCS) {
    if (pacer.due()) await pacer.pause();
    const count = Math.min(SCAN_DOCS, n - first);
    const at = offsets.subarray(0, count + 1);
    await out.read(SECTIONS.forwardOffsets, first, at);
    const base = at[0]!;
    const length = at[count]! - base;
    if (length > tokens.length) tokens = new Uint32Array(length);
    await out.read(SECTIONS.forwardTerms, base, tokens.subarray(0, length));
    for (let i = 0; i < count; i++) visit(first + i, tokens, at[i]! - base, at[i + 1]! - base);
  }
}

/**
 * Postings split into "at the first title token" and "elsewhere" runs (SplitPostingSections), built by
 * counting sort. `keysOf` emits each key of a document; a key goes into the start run when the
 * first title token has it, and into the later run when any later token has it, so a document can
 * be in both ("Bora Bora"): a query token that must match a later token reads the later runs alone
 * (search/planning.ts). Repeats at later tokens are dropped. One counting pass over the documents, then a window of whole keys
 * at a time: one pass in document order fills the window's runs in the weight order (documents
 * are numbered by weight), and the same runs in the length and geo orders are derived from it (each
 * document mapped to its position in that order, each run sorted), not filled by visiting the
 * documents in those orders, which would read the forward index at random.
 */
async function writeSplitPostings(
  out: SegmentFileWriter,
  sections: SplitPostingSections,
  keyCount: number,
  orders: DocOrders,
  windowBytes: number,
  pacer: Pacer,
  keysOf: KeysOf,
): Promise<void> {
  const { n, docToLengthRank, geoPosition } = orders;
  const seen = new Uint32Array(keyCount);
  let mark = 0;
  const startCount = new Uint32Array(keyCount);
  const otherCount = new Uint32Array(keyCount);
  const startGeo = new Uint32Array(keyCount);
  const otherGeo = new Uint32Array(keyCount);
  let located = false;
  const count: Emit = (key, atStart) => {
    // Only the first token emits at the start, each key once: only later keys need the check.
    if (!atStart) {
      if (seen[key] === mark) return;
      seen[key] = mark;
    }
    (atStart ? startCount : otherCount)[key]!++;
    if (located) (atStart ? startGeo : otherGeo)[key]!++;
  };
  await scanTitles(out, n, pacer, (doc, tokens, from, to) => {
    mark++;
    located = geoPosition !== null && geoPosition[doc] !== NONE;
    keysOf(tokens, from, to, count, 0, keyCount);
  });

  const layout = (starts: Uint32Array, others: Uint32Array) => {
    const offsets = new Uint32Array(2 * keyCount + 1);
    let total = 0;
    for (let k = 0; k < keyCount; k++) {
      offsets[2 * k] = total;
      total += starts[k]!;
      offsets[2 * k + 1] = total;
      total += others[k]!;
    }
    offsets[2 * keyCount] = total;
    return offsets;
  };
  const offsets = layout(startCount, otherCount);
  const geoOffsets = layout(startGeo, otherGeo);
  await out.add(sections.offsets, offsets);
  const putDocs = out.reserve(sections.docs, offsets[2 * keyCount]!);
  const putRanks = out.reserve(sections.ranks, offsets[2 * keyCount]!);
  await out.add(sections.geoOffsets, geoOffsets);
  const putGeo = out.reserve(sections.geoPositions, geoOffsets[2 * keyCount]!);

  // With coordinates a window's geo runs are held beside it: each gets half the window.
  const { windows, largest } = splitIntoWindows(
    keyCount,
    (key) => offsets[2 * key]!,
    windowBytes / (geoPosition === null ? 4 : 8),
  );
  // One buffer for every window: a new one per window would leave the last windows' buffers to
  // the garbage collector, which frees them late (several windows' worth resident at once).
  const buffer = new Uint32Array(largest);
  const geoBuffer = geoPosition === null ? null : new Uint32Array(largest);
  const sorter = new RunSorter(longestRun(offsets), pacer);
  const cursor = offsets.slice();
  for (let w = 0; w + 1 < windows.length; w++) {
    const low = windows[w]!;
    const high = windows[w + 1]!;
    const base = offsets[2 * low]!;
    const part = buffer.subarray(0, offsets[2 * high]! - base);
    if (part.length === 0) continue;
    let doc = 0;
    const emit: Emit = (key, atStart) => {
      if (key < low || key >= high) return;
      if (!atStart) {
        if (seen[key] === mark) return;
        seen[key] = mark;
      }
      part[cursor[atStart ? 2 * key : 2 * key + 1]!++ - base] = doc;
    };
    await scanTitles(out, n, pacer, (d, tokens, from, to) => {
      mark++;
      doc = d;
      keysOf(tokens, from, to, emit, low, high);
    });
    await putDocs(part, base);

    if (geoPosition !== null) {
      const geoBase = geoOffsets[2 * low]!;
      const geoPart = geoBuffer!.subarray(0, geoOffsets[2 * high]! - geoBase);
      let at = 0;
      for (let i = 0; i < part.length; i++) {
        const g = geoPosition[part[i]!]!;
        if (g !== NONE) geoPart[at++] = g;
      }
      await sorter.sortRuns(geoPart, geoOffsets, 2 * low, 2 * high, geoPosition.length);
      await putGeo(geoPart, geoBase);
    }
    for (let i = 0; i < part.length; i++) part[i] = docToLengthRank[part[i]!]!;
    await sorter.sortRuns(part, offsets, 2 * low, 2 * high, n);
    await putRanks(part, base);
  }
  release(buffer);
  if (geoBuffer !== null) release(geoBuffer);
  sorter.release();
}

/** The title postings (TITLE_POSTINGS): each document's title terms, the first one "at start". */
export async function writeTitlePostings(
  out: SegmentFileWriter,
  termCount: number,
  orders: DocOrders,
  windowBytes: number,
  pacer: Pacer,
): Promise<void> {
  await writeSplitPostings(
    out,
    TITLE_POSTINGS,
    termCount,
    orders,
    windowBytes,
    pacer,
    (tokens, from, to, emit, low, high) => {
      for (let i = from; i < to; i++) {
        const t = tokens[i]!;
        if (t >= low && t < high) emit(t, i === from);
      }
    },
  );
}

/** The prefix postings (PREFIX_POSTINGS): the prefixes of each document's title terms. */
export async function writePrefixPostings(
  out: SegmentFileWriter,
  prefixes: TermPrefixes,
  termCount: number,
  maxPrefix: number,
  orders: DocOrders,
  windowBytes: number,
  pacer: Pacer,
): Promise<void> {
  const L = maxPrefix;
  const termPrefixes = prefixes.ofTerm;
  // A term's prefixes ("a", "am", "amb") are ascending prefix ids: a window of ids that misses
  // [first, last] has none of them, and the term is passed over without looking at each.
  const firstPrefix = new Uint32Array(termCount).fill(NONE);
  const lastPrefix = new Uint32Array(termCount);
  for (let t = 0; t < termCount; t++) {
    for (let k = 0; k < L && termPrefixes[t * L + k] !== NONE; k++) {
      if (k === 0) firstPrefix[t] = termPrefixes[t * L]!;
      lastPrefix[t] = termPrefixes[t * L + k]!;
    }
  }
  await writeSplitPostings(
    out,
    PREFIX_POSTINGS,
    prefixes.count,
    orders,
    windowBytes,
    pacer,
    (tokens, from, to, emit, low, high) => {
      for (let i = from; i < to; i++) {
        const t = tokens[i]!;
        if (firstPrefix[t]! >= high || lastPrefix[t]! < low) continue;
        for (let k = 0; k < L; k++) {
          const p = termPrefixes[t * L + k]!;
          if (p === NONE) break;
          emit(p, i === from);
        }
      }
    },
  );
}
