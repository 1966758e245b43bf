// Builds a segment from a stream of records (bulk ingest or checkpoint). Records go to
// records.bin as they arrive; per-record index data is kept in typed arrays and turned into the
// sections described in segment.ts by finish(). Nothing is visible until the catalog says so.
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../ports/engine.ts";
import { tokenize } from "../tokenize.ts";
import { Growable, invert, radixSortByKey, sortIndices } from "./arrays.ts";
import { walkData, type FilterLeaf } from "./data-fields.ts";
import { geoCode } from "./geo.ts";
import { INDEX_FILE, KIND_FALSE, KIND_MISSING, KIND_NUMBER, KIND_TRUE, RECORDS_FILE, Segment, type SegmentMeta } from "./segment.ts";
import { writeSegmentFile, type Section } from "./segment-file.ts";
import { SortedStrings, compareCodePoints } from "./sorted-strings.ts";
import { Pacer } from "./pacer.ts";

const NONE = 0xffff_ffff;
/** Loop iterations between asking the pacer whether to give the event loop back. */
const CHECK_EVERY = 0x3fff;
const WRITE_CHUNK = 4 << 20;
const TEXT_CACHE_LENGTH = 48;
const TEXT_CACHE_ENTRIES = 200_000;
/** Strings whose UTF-16 order differs from code point order (astral or U+E000..U+FFFF characters). */
const HIGH_UNITS = /[\ud800-\uffff]/;

interface FilterColumn {
  path: string[];
  kinds: Growable<Uint8Array>;
  nums: Growable<Float64Array>;
}

/** Filter columns by path, one level per key (no key strings built per value). */
interface ColumnNode {
  column?: FilterColumn;
  children: Map<string, ColumnNode>;
}

export class SegmentBuilder {
  readonly dir: string;
  private readonly maxPrefix: number;
  private readonly fd: number;
  /** Records encoded but not yet written to records.bin. */
  private pending = Buffer.allocUnsafe(WRITE_CHUNK);
  private pendingBytes = 0;
  private fileOffset = 0;

  private readonly ids: string[] = [];
  private plainIds = true;
  private readonly recOffset = new Growable(Float64Array);
  private readonly recLength = new Growable(Uint32Array);
  private readonly weight = new Growable(Uint32Array);
  private readonly lat = new Growable(Float64Array);
  private readonly lon = new Growable(Float64Array);
  private readonly titleStart = new Growable(Uint32Array);
  private readonly titleTokens = new Growable(Uint32Array);
  private readonly dataStart = new Growable(Uint32Array);
  private readonly dataTokens = new Growable(Uint32Array);
  private readonly vocabulary = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly inTitle = new Growable(Uint8Array);
  private readonly textCache = new Map<string, number[]>();
  /** Per term: last slot that used it, to de-duplicate a record's data tokens. */
  private readonly seenIn = new Growable(Uint32Array);
  private readonly filters: FilterColumn[] = [];
  private readonly filterTree: ColumnNode = { children: new Map() };

  private constructor(dir: string, maxPrefix: number) {
    this.dir = dir;
    this.maxPrefix = maxPrefix;
    this.fd = fs.openSync(path.join(dir, RECORDS_FILE), "w");
    this.titleStart.push(0);
    this.dataStart.push(0);
  }

  static async create(dir: string, maxPrefix: number): Promise<SegmentBuilder> {
    await fs.promises.mkdir(dir, { recursive: true });
    return new SegmentBuilder(dir, maxPrefix);
  }

  get size(): number {
    return this.ids.length;
  }

  /** Adds a record; a later record with the same id replaces the earlier one. */
  add(record: SearchRecord): void {
    const slot = this.ids.length;
    const json = JSON.stringify(record);
    // UTF-8 needs at most 3 bytes per UTF-16 unit: flush first unless the record surely fits.
    if (this.pendingBytes + json.length * 3 > this.pending.length) {
      this.flush();
      if (json.length * 3 > this.pending.length) this.pending = Buffer.allocUnsafe(json.length * 3);
    }
    const bytes = this.pending.write(json, this.pendingBytes, "utf8");
    this.recOffset.push(this.fileOffset + this.pendingBytes);
    this.recLength.push(bytes);
    this.pendingBytes += bytes;

    this.ids.push(record.id);
    if (this.plainIds && HIGH_UNITS.test(record.id)) this.plainIds = false;
    this.weight.push(record.weight ?? 0);
    const hasGeo = record.latitude !== undefined && record.longitude !== undefined;
    this.lat.push(hasGeo ? Number(record.latitude) : NaN);
    this.lon.push(hasGeo ? Number(record.longitude) : NaN);

    for (const token of tokenize(record.title)) {
      const t = this.termId(token);
      this.inTitle.set(t, 1);
      this.seenIn.set(t, slot + 1);
      this.titleTokens.push(t);
    }
    this.titleStart.push(this.titleTokens.length);

    walkData(
      record.data,
      (text) => {
        for (const t of this.textTerms(text)) {
          if (this.seenIn.get(t) !== slot + 1) {
            this.seenIn.set(t, slot + 1);
            this.dataTokens.push(t);
          }
        }
      },
      (leafPath, value) => this.addFilterValue(slot, leafPath, value),
    );
    this.dataStart.push(this.dataTokens.length);
  }

  /** Term ids of a data string; short strings (categories, colours, tags) repeat, so they are cached. */
  private textTerms(text: string): readonly number[] {
    const cacheable = text.length <= TEXT_CACHE_LENGTH;
    const cached = cacheable ? this.textCache.get(text) : undefined;
    if (cached !== undefined) return cached;
    const terms = tokenize(text).map((token) => this.termId(token));
    if (cacheable && this.textCache.size < TEXT_CACHE_ENTRIES) this.textCache.set(text, terms);
    return terms;
  }

  private termId(token: string): number {
    let t = this.vocabulary.get(token);
    if (t === undefined) {
      t = this.terms.length;
      this.vocabulary.set(token, t);
      this.terms.push(token);
      this.seenIn.set(t, 0);
    }
    return t;
  }

  private addFilterValue(slot: number, leafPath: readonly string[], value: FilterLeaf): void {
    let node = this.filterTree;
    for (const key of leafPath) {
      let child = node.children.get(key);
      if (child === undefined) node.children.set(key, (child = { children: new Map() }));
      node = child;
    }
    let column = node.column;
    if (column === undefined) {
      column = { path: [...leafPath], kinds: new Growable(Uint8Array), nums: new Growable(Float64Array) };
      node.column = column;
      this.filters.push(column);
    }
    if (typeof value === "number") {
      column.kinds.set(slot, KIND_NUMBER);
      column.nums.set(slot, value);
    } else {
      column.kinds.set(slot, value ? KIND_TRUE : KIND_FALSE);
    }
  }

  private flush(): void {
    let written = 0;
    while (written < this.pendingBytes) {
      written += fs.writeSync(this.fd, this.pending, written, this.pendingBytes - written, this.fileOffset + written);
    }
    this.fileOffset += this.pendingBytes;
    this.pendingBytes = 0;
  }

  /** Builds the index, makes both files durable, and returns the loaded segment. */
  async finish(): Promise<Segment> {
    const { meta, sections } = await this.finishFiles();
    return Segment.fromSections(this.dir, meta, sections);
  }

  /** Builds the index and makes both files durable; returns what a Segment is made of. */
  async finishFiles(): Promise<{ meta: SegmentMeta; sections: Record<string, Section> }> {
    this.flush();
    // Asynchronous: flushing hundreds of megabytes to disk must not hold the event loop.
    await new Promise<void>((resolve, reject) => fs.fsync(this.fd, (error) => (error ? reject(error) : resolve())));
    fs.closeSync(this.fd);

    const pacer = new Pacer();
    const { slotOfDoc, rankOfDoc, ranked } = await this.orderDocuments(pacer);
    const n = slotOfDoc.length;
    const termOrder = await this.sortTerms(pacer);
    const finalTerm = invert(termOrder);
    const termCount = termOrder.length;

    // Forward index in document order, with final term ids.
    const fwdOffsets = new Uint32Array(n + 1);
    let fwdTotal = 0;
    for (let d = 0; d < n; d++) {
      const s = slotOfDoc[d]!;
      fwdOffsets[d] = fwdTotal;
      fwdTotal += this.titleStart.get(s + 1) - this.titleStart.get(s);
    }
    fwdOffsets[n] = fwdTotal;
    const fwdTokens = new Uint32Array(fwdTotal);
    let maxTitleTokens = 0;
    const slotTokens = this.titleTokens.view();
    for (let d = 0; d < n; d++) {
      if ((d & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
      const s = slotOfDoc[d]!;
      const from = this.titleStart.get(s);
      const to = this.titleStart.get(s + 1);
      maxTitleTokens = Math.max(maxTitleTokens, to - from);
      let at = fwdOffsets[d]!;
      for (let i = from; i < to; i++) fwdTokens[at++] = finalTerm[slotTokens[i]!]!;
    }

    const perDoc = <T extends Uint32Array | Float64Array | Uint8Array>(source: T, make: (n: number) => T): T => {
      const out = make(n);
      for (let d = 0; d < n; d++) out[d] = source[slotOfDoc[d]!]!;
      return out;
    };
    const lat = perDoc(this.lat.view(), (k) => new Float64Array(k));
    const lon = perDoc(this.lon.view(), (k) => new Float64Array(k));
    const { geoCodes, geoDocs } = buildGeo(lat, lon);
    const orders: DocOrders = { rankToDoc: invert(rankOfDoc), geoDocs };

    const term = await buildSplitPostings(n, termCount, orders, pacer, (doc, emit) => {
      const from = fwdOffsets[doc]!;
      const to = fwdOffsets[doc + 1]!;
      for (let i = from; i < to; i++) emit(fwdTokens[i]!, i === from);
    });
    const data = await this.buildDataPostings(slotOfDoc, finalTerm, termCount, pacer);
    const prefix = await this.buildPrefixPostings(termOrder, orders, fwdOffsets, fwdTokens, pacer);

    const termTable = await SortedStrings.pack(termCount, (i) => this.terms[termOrder[i]!]!, pacer);
    const sections: Record<string, Section> = {
      termBytes: termTable.bytes,
      termOffsets: termTable.offsets,
      termPost: term.offsets,
      termDocs: term.docs,
      termRanks: term.ranks,
      termPostGeo: term.geoOffsets,
      termGeo: term.geo,
      dataPost: data.offsets,
      dataDocs: data.docs,
      prefixBytes: prefix.table.bytes,
      prefixOffsets: prefix.table.offsets,
      prefixPost: prefix.postings.offsets,
      prefixDocs: prefix.postings.docs,
      prefixRanks: prefix.postings.ranks,
      prefixPostGeo: prefix.postings.geoOffsets,
      prefixGeo: prefix.postings.geo,
      fwdOffsets,
      fwdTokens,
      rankToDoc: orders.rankToDoc,
      docToRank: rankOfDoc,
      weight: perDoc(this.weight.view(), (k) => new Uint32Array(k)),
      lat,
      lon,
      geoCodes,
      geoDocs,
      recOffsets: perDoc(this.recOffset.view(), (k) => new Float64Array(k)),
      recLengths: perDoc(this.recLength.view(), (k) => new Uint32Array(k)),
    };
    const ids = await SortedStrings.pack(n, (r) => this.ids[ranked[r]!]!, pacer);
    sections.idBytes = ids.bytes;
    sections.idOffsets = ids.offsets;

    const filterPaths: string[][] = [];
    for (const column of this.filters) {
      const i = filterPaths.length;
      filterPaths.push(column.path);
      const kinds = new Uint8Array(n);
      const nums = new Float64Array(n);
      const slotKinds = column.kinds.view();
      const slotNums = column.nums.view();
      for (let d = 0; d < n; d++) {
        const s = slotOfDoc[d]!;
        kinds[d] = slotKinds[s] ?? KIND_MISSING;
        nums[d] = slotNums[s] ?? 0;
      }
      sections[`filter${i}Kind`] = kinds;
      sections[`filter${i}Num`] = nums;
    }

    const meta: SegmentMeta = { docCount: n, maxPrefix: this.maxPrefix, maxTitleTokens, filterPaths };
    await writeSegmentFile(path.join(this.dir, INDEX_FILE), meta, sections);
    await syncDirectory(this.dir);
    return { meta, sections };
  }

  /** Closes and removes everything written. */
  async abort(): Promise<void> {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed by finish()
    }
    await fs.promises.rm(this.dir, { recursive: true, force: true });
  }

  /**
   * Drops replaced duplicates and numbers documents by (weight desc, id asc).
   * ranked: live slots in id order; rankOfDoc/slotOfDoc: per document.
   */
  private async orderDocuments(pacer: Pacer): Promise<{ slotOfDoc: Uint32Array; rankOfDoc: Uint32Array; ranked: Uint32Array }> {
    const ids = this.ids;
    // By id, equal ids in slot order; the native string comparison is code point order for most ids.
    const bySlotId = await sortIndices(
      ids.length,
      this.plainIds ? (a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0) : (a, b) => compareCodePoints(ids[a]!, ids[b]!),
      pacer,
    );
    const live = new Growable(Uint32Array, Math.max(1, ids.length));
    for (let i = 0; i < bySlotId.length; i++) {
      const s = bySlotId[i]!;
      // Within a run of equal ids the last slot (the latest add) wins.
      if (i + 1 < bySlotId.length && ids[bySlotId[i + 1]!] === ids[s]) continue;
      live.push(s);
    }
    const ranked = live.view().slice();
    const n = ranked.length;
    const weights = this.weight.view();
    const keys = new Uint32Array(n);
    const ranks = new Uint32Array(n);
    for (let r = 0; r < n; r++) {
      keys[r] = NONE - weights[ranked[r]!]!;
      ranks[r] = r;
    }
    const rankOfDoc = radixSortByKey(keys, ranks);
    const slotOfDoc = new Uint32Array(n);
    for (let d = 0; d < n; d++) slotOfDoc[d] = ranked[rankOfDoc[d]!]!;
    return { slotOfDoc, rankOfDoc, ranked };
  }

  /** Temporary term ids in byte (code point) order of the terms. */
  private sortTerms(pacer: Pacer): Promise<Uint32Array> {
    const terms = this.terms;
    return sortIndices(terms.length, (a, b) => compareCodePoints(terms[a]!, terms[b]!), pacer);
  }

  private async buildDataPostings(
    slotOfDoc: Uint32Array,
    finalTerm: Uint32Array,
    termCount: number,
    pacer: Pacer,
  ): Promise<{ offsets: Uint32Array; docs: Uint32Array }> {
    const n = slotOfDoc.length;
    const counts = new Uint32Array(termCount + 1);
    const tokens = this.dataTokens.view();
    const starts = this.dataStart.view();
    for (let d = 0; d < n; d++) {
      if ((d & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
      const s = slotOfDoc[d]!;
      for (let i = starts[s]!; i < starts[s + 1]!; i++) counts[finalTerm[tokens[i]!]! + 1]!++;
    }
    for (let t = 1; t <= termCount; t++) counts[t]! += counts[t - 1]!;
    const offsets = counts.slice();
    const docs = new Uint32Array(offsets[termCount]!);
    for (let d = 0; d < n; d++) {
      if ((d & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
      const s = slotOfDoc[d]!;
      for (let i = starts[s]!; i < starts[s + 1]!; i++) docs[counts[finalTerm[tokens[i]!]!]!++] = d;
    }
    return { offsets, docs };
  }

  /** Prefixes of 1..maxPrefix characters of every title term, and their split postings. */
  private async buildPrefixPostings(
    termOrder: Uint32Array,
    orders: DocOrders,
    fwdOffsets: Uint32Array,
    fwdTokens: Uint32Array,
    pacer: Pacer,
  ): Promise<{ table: SortedStrings; postings: Postings }> {
    const L = this.maxPrefix;
    const prefixIds = new Map<string, number>();
    const prefixList: string[] = [];
    const termPrefixes = new Uint32Array(termOrder.length * L).fill(NONE);
    termOrder.forEach((tmp, t) => {
      if (this.inTitle.get(tmp) !== 1) return;
      const chars = Array.from(this.terms[tmp]!);
      for (let len = 1; len <= Math.min(L, chars.length); len++) {
        const p = chars.slice(0, len).join("");
        let id = prefixIds.get(p);
        if (id === undefined) {
          id = prefixList.length;
          prefixIds.set(p, id);
          prefixList.push(p);
        }
        termPrefixes[t * L + len - 1] = id;
      }
    });
    const order = await sortIndices(prefixList.length, (a, b) => compareCodePoints(prefixList[a]!, prefixList[b]!), pacer);
    const finalPrefix = invert(order);
    for (let i = 0; i < termPrefixes.length; i++) if (termPrefixes[i] !== NONE) termPrefixes[i] = finalPrefix[termPrefixes[i]!]!;

    const postings = await buildSplitPostings(fwdOffsets.length - 1, order.length, orders, pacer, (doc, emit) => {
      const from = fwdOffsets[doc]!;
      const to = fwdOffsets[doc + 1]!;
      for (let i = from; i < to; i++) {
        const t = fwdTokens[i]!;
        for (let k = 0; k < L; k++) {
          const p = termPrefixes[t * L + k]!;
          if (p === NONE) break;
          emit(p, i === from);
        }
      }
    });
    return { table: await SortedStrings.pack(order.length, (i) => prefixList[order[i]!]!, pacer), postings };
  }
}

/** The id and geo orders of the documents (the weight order is the document numbering itself). */
interface DocOrders {
  rankToDoc: Uint32Array;
  geoDocs: Uint32Array;
}

/** Split posting runs in the three orders; the geo order holds only documents with coordinates. */
interface Postings {
  offsets: Uint32Array;
  docs: Uint32Array;
  ranks: Uint32Array;
  geoOffsets: Uint32Array;
  geo: Uint32Array;
}

type Emit = (key: number, atStart: boolean) => void;

/**
 * Postings split into "at the first title token" and "elsewhere" runs (see segment.ts), built by
 * counting sort: one counting pass, then one filling pass per order, visiting documents in that
 * order so every run comes out sorted. `visit` emits each key of a document; duplicates within a
 * document are dropped, the first occurrence decides.
 */
async function buildSplitPostings(
  n: number,
  keyCount: number,
  orders: DocOrders,
  pacer: Pacer,
  visit: (doc: number, emit: Emit) => void,
): Promise<Postings> {
  const seen = new Uint32Array(keyCount);
  let mark = 0;
  const startCount = new Uint32Array(keyCount);
  const otherCount = new Uint32Array(keyCount);
  const startGeo = new Uint32Array(keyCount);
  const otherGeo = new Uint32Array(keyCount);
  let located = false;
  const count: Emit = (key, atStart) => {
    if (seen[key] === mark) return;
    seen[key] = mark;
    (atStart ? startCount : otherCount)[key]!++;
    if (located) (atStart ? startGeo : otherGeo)[key]!++;
  };
  const isLocated = new Uint8Array(n);
  for (const d of orders.geoDocs) isLocated[d] = 1;
  for (let doc = 0; doc < n; doc++) {
    if ((doc & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
    mark++;
    located = isLocated[doc] === 1;
    visit(doc, count);
  }

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

  /** Fills runs visiting documents in an order; each entry is the document's position in that order. */
  const fill = async (runOffsets: Uint32Array, length: number, docAt: (position: number) => number): Promise<Uint32Array> => {
    const out = new Uint32Array(runOffsets[2 * keyCount]!);
    const cursor = runOffsets.slice();
    let position = 0;
    const emit: Emit = (key, atStart) => {
      if (seen[key] === mark) return;
      seen[key] = mark;
      out[cursor[atStart ? 2 * key : 2 * key + 1]!++] = position;
    };
    for (position = 0; position < length; position++) {
      if ((position & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
      mark++;
      visit(docAt(position), emit);
    }
    return out;
  };
  const { rankToDoc, geoDocs } = orders;
  return {
    offsets,
    docs: await fill(offsets, n, (d) => d),
    ranks: await fill(offsets, n, (r) => rankToDoc[r]!),
    geoOffsets,
    geo: await fill(geoOffsets, geoDocs.length, (g) => geoDocs[g]!),
  };
}

function buildGeo(lat: Float64Array, lon: Float64Array): { geoCodes: Uint32Array; geoDocs: Uint32Array } {
  const docs = new Growable(Uint32Array);
  for (let d = 0; d < lat.length; d++) if (!Number.isNaN(lat[d]!)) docs.push(d);
  const withGeo = docs.view();
  const codes = new Uint32Array(withGeo.length);
  for (let i = 0; i < withGeo.length; i++) codes[i] = geoCode(lat[withGeo[i]!]!, lon[withGeo[i]!]!);
  const geoDocs = radixSortByKey(codes, withGeo);
  const geoCodes = new Uint32Array(geoDocs.length);
  for (let i = 0; i < geoDocs.length; i++) geoCodes[i] = geoCode(lat[geoDocs[i]!]!, lon[geoDocs[i]!]!);
  return { geoCodes, geoDocs };
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
