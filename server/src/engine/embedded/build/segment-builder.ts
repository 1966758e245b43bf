// Builds a segment from a stream of records (bulk ingest or checkpoint). Records go to
// records.bin as they arrive; ids and weights stay in typed arrays (the document order needs them),
// the rest of each record's index data goes to a slot log on disk (slot-log.ts), and finish() turns
// both into the sections of segment/sections.ts, written one at a time (docs/DECISIONS.md E12).
// Nothing is visible until the catalog says so.
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../../ports/engine.ts";
import { tokenize } from "../../tokenize.ts";
import { Growable, invert, radixSortByKey, release, sortByKey, sortIndices } from "../util/arrays.ts";
import { walkData, type FilterLeaf } from "../columns/data-fields.ts";
import { KIND_FALSE, KIND_NUMBER, KIND_TRUE } from "../columns/filter-columns.ts";
import { geoCode } from "../columns/geo.ts";
import { INDEX_FILE, RECORDS_FILE, type SegmentMeta } from "../segment/meta.ts";
import { SegmentFileWriter } from "../segment/segment-file.ts";
import { PREFIX_POSTINGS, SECTIONS, TITLE_POSTINGS, filterColumnSections } from "../segment/sections.ts";
import { SlotLog, type SlotLogReader } from "./slot-log.ts";
import { SortedStrings, compareCodePoints } from "../termdict/sorted-strings.ts";
import { Pacer } from "../util/pacer.ts";
import { RunSorter, docOrders, longestRun, splitIntoWindows, writeSplitPostings, type DocOrders } from "../postings/split-postings.ts";

const NONE = 0xffff_ffff;
/** Loop iterations between asking the pacer whether to give the event loop back. */
const CHECK_EVERY = 0x3fff;
const WRITE_CHUNK = 4 << 20;
const TEXT_CACHE_LENGTH = 48;
const TEXT_CACHE_ENTRIES = 200_000;
/**
 * Largest window of a posting section filled in memory at once (bytes). Bigger sections are filled
 * window by window, each pass visiting every document again: a segment of 20M small records has
 * a 1.6 GB prefix section, which must not be in memory whole (the 2 GB ingest target).
 */
const POSTING_WINDOW_BYTES = 128 << 20;
/** The builder's temporary per-record log (slot-log.ts), removed when the build ends. */
const SLOT_LOG_FILE = "slots.tmp";
const NON_ASCII = /[^\u0000-\u007f]/;

interface FilterColumn {
  path: string[];
  index: number;
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

  /** Ids as UTF-8 (whose byte order is code point order), not millions of small strings. */
  private readonly idBytes = new Growable(Uint8Array);
  private readonly idEnds = new Growable(Uint32Array);
  private readonly weight = new Growable(Uint32Array);
  /** Per slot: JSON length, title and data term ids, filter values (see writeSlot). */
  private readonly log: SlotLog;
  /** Coordinates of the records that have them (most records of many indexes do not). */
  private readonly geoSlots = new Growable(Uint32Array);
  private readonly geoLat = new Growable(Float64Array);
  private readonly geoLon = new Growable(Float64Array);
  private readonly slotTitle: number[] = [];
  private readonly slotData: number[] = [];
  private readonly slotFilters: number[] = [];
  private readonly vocabulary = new Map<string, number>();
  private readonly terms: string[] = [];
  private readonly inTitle = new Growable(Uint8Array);
  private readonly textCache = new Map<string, number[]>();
  /** Per term: last slot that used it, to de-duplicate a record's data tokens. */
  private readonly seenIn = new Growable(Uint32Array);
  private readonly filters: FilterColumn[] = [];
  private readonly filterTree: ColumnNode = { children: new Map() };

  private readonly postingWindow: number;

  private constructor(dir: string, maxPrefix: number, postingWindow: number) {
    this.dir = dir;
    this.maxPrefix = maxPrefix;
    this.postingWindow = postingWindow;
    this.fd = fs.openSync(path.join(dir, RECORDS_FILE), "w");
    this.log = new SlotLog(path.join(dir, SLOT_LOG_FILE));
  }

  /** `postingWindow`: see POSTING_WINDOW_BYTES; tests make it tiny to fill in many windows. */
  static async create(dir: string, maxPrefix: number, postingWindow = POSTING_WINDOW_BYTES): Promise<SegmentBuilder> {
    await fs.promises.mkdir(dir, { recursive: true });
    return new SegmentBuilder(dir, maxPrefix, postingWindow);
  }

  get size(): number {
    return this.idEnds.length;
  }

  /** Adds a record; a later record with the same id replaces the earlier one. */
  add(record: SearchRecord): void {
    const slot = this.idEnds.length;
    const json = JSON.stringify(record);
    // UTF-8 needs at most 3 bytes per UTF-16 unit: flush first unless the record surely fits.
    if (this.pendingBytes + json.length * 3 > this.pending.length) {
      this.flush();
      if (json.length * 3 > this.pending.length) this.pending = Buffer.allocUnsafe(json.length * 3);
    }
    const bytes = this.pending.write(json, this.pendingBytes, "utf8");
    this.pendingBytes += bytes;

    const id = record.id;
    if (NON_ASCII.test(id)) for (const byte of Buffer.from(id, "utf8")) this.idBytes.push(byte);
    else for (let i = 0; i < id.length; i++) this.idBytes.push(id.charCodeAt(i));
    if (this.idBytes.length > 0xffff_ffff) throw new Error("ids of one segment larger than 4 GiB");
    this.idEnds.push(this.idBytes.length);
    this.weight.push(record.weight ?? 0);
    if (record.latitude !== undefined && record.longitude !== undefined) {
      this.geoSlots.push(slot);
      this.geoLat.push(Number(record.latitude));
      this.geoLon.push(Number(record.longitude));
    }

    const title = this.slotTitle;
    const data = this.slotData;
    for (const token of tokenize(record.title)) {
      const t = this.termId(token);
      this.inTitle.set(t, 1);
      this.seenIn.set(t, slot + 1);
      title.push(t);
    }
    walkData(
      record.data,
      (text) => {
        for (const t of this.textTerms(text)) {
          if (this.seenIn.get(t) !== slot + 1) {
            this.seenIn.set(t, slot + 1);
            data.push(t);
          }
        }
      },
      (leafPath, value) => this.addFilterValue(leafPath, value),
    );
    this.writeSlot(bytes);
  }

  /**
   * One slot in the log: JSON length, title term count and ids, data term count and ids, filter
   * value count and values (column, kind, and for numbers the value as two words).
   */
  private writeSlot(jsonBytes: number): void {
    const log = this.log;
    log.push(jsonBytes);
    for (const list of [this.slotTitle, this.slotData]) {
      log.push(list.length);
      for (const t of list) log.push(t);
      list.length = 0;
    }
    const filters = this.slotFilters;
    log.push(filters.length / 3);
    for (let i = 0; i < filters.length; i += 3) {
      log.push(filters[i]!);
      log.push(filters[i + 1]!);
      if (filters[i + 1] === KIND_NUMBER) log.pushNumber(filters[i + 2]!);
    }
    filters.length = 0;
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

  private addFilterValue(leafPath: readonly string[], value: FilterLeaf): void {
    let node = this.filterTree;
    for (const key of leafPath) {
      let child = node.children.get(key);
      if (child === undefined) node.children.set(key, (child = { children: new Map() }));
      node = child;
    }
    let column = node.column;
    if (column === undefined) {
      column = { path: [...leafPath], index: this.filters.length };
      node.column = column;
      this.filters.push(column);
    }
    if (typeof value === "number") this.slotFilters.push(column.index, KIND_NUMBER, value);
    else this.slotFilters.push(column.index, value ? KIND_TRUE : KIND_FALSE, 0);
  }

  private flush(): void {
    let written = 0;
    while (written < this.pendingBytes) {
      written += fs.writeSync(this.fd, this.pending, written, this.pendingBytes - written, this.fileOffset + written);
    }
    this.fileOffset += this.pendingBytes;
    this.pendingBytes = 0;
  }

  /**
   * Builds the index and makes both files durable. Each section is written as soon as it is built
   * and dropped, and the builder's own per-record data is released after its last use, so the peak
   * is the inputs plus the few sections later ones are derived from, not the whole index at once.
   * The builder is spent afterwards.
   */
  async finishFiles(): Promise<SegmentMeta> {
    this.flush();
    // Asynchronous: flushing hundreds of megabytes to disk must not hold the event loop.
    await new Promise<void>((resolve, reject) => fs.fsync(this.fd, (error) => (error ? reject(error) : resolve())));
    fs.closeSync(this.fd);

    const out = await SegmentFileWriter.create(path.join(this.dir, INDEX_FILE));
    let meta: SegmentMeta;
    try {
      meta = await this.writeSections(out);
      await out.finish(meta);
    } catch (error) {
      await out.close();
      throw error;
    }
    this.log.remove();
    await syncDirectory(this.dir);
    return meta;
  }

  /**
   * Writes the sections in phases, each a method returning only what later phases need: arrays a
   * long function still names stay reachable until it returns, and at 20M records each is 80 to
   * 160 MB. The few that are passed on are dropped (set to null) after their last use. The
   * postings, the largest sections, are derived from the forward index read back from the file.
   */
  private async writeSections(out: SegmentFileWriter): Promise<SegmentMeta> {
    const pacer = new Pacer();
    const ordered = await this.writeIdsAndOrders(out, pacer);
    const { n, docToRank } = ordered;
    let docOfSlot: Uint32Array | null = ordered.docOfSlot!;
    ordered.docOfSlot = null;
    const geoDocs = await this.writeGeo(out, docOfSlot, n);
    await this.writeRecordLocations(out, docOfSlot, n, pacer);
    const located = await this.countTitleTerms(docOfSlot, n, pacer);
    const { maxTitleTokens } = located;
    const termOrder = await this.sortTerms(pacer);
    const termCount = termOrder.length;
    const finalTerm = invert(termOrder);
    await this.writeDataPostings(out, docOfSlot, finalTerm, pacer);
    const filterPaths = await this.writeFilters(out, docOfSlot, n, pacer);
    await this.writeForwardIndex(out, docOfSlot, located.fwdOffsets!, finalTerm, pacer);
    located.fwdOffsets = null;
    release(docOfSlot);
    docOfSlot = null;

    const orders = docOrders(n, docToRank, geoDocs);
    release(geoDocs);
    await writeSplitPostings(out, TITLE_POSTINGS, termCount, orders, this.postingWindow, pacer, (tokens, from, to, emit, low, high) => {
      for (let i = from; i < to; i++) {
        const t = tokens[i]!;
        if (t >= low && t < high) emit(t, i === from);
      }
    });
    await this.writePrefixPostings(out, termOrder, orders, pacer);
    release(docToRank);
    if (orders.geoPosition !== null) release(orders.geoPosition);

    const termTable = await SortedStrings.pack(termCount, (i) => this.terms[termOrder[i]!]!, pacer);
    await out.add(SECTIONS.termDictBytes, termTable.bytes);
    await out.add(SECTIONS.termDictOffsets, termTable.offsets);
    return { docCount: n, maxPrefix: this.maxPrefix, maxTitleTokens, filterPaths };
  }

  /**
   * Ids first (sorted, de-duplicated, written, their memory released before anything else grows),
   * then the weight order. docOfSlot: each slot's document, NONE for a replaced duplicate;
   * docToRank: each document's position in id order.
   */
  private async writeIdsAndOrders(out: SegmentFileWriter, pacer: Pacer): Promise<{ n: number; docOfSlot: Uint32Array | null; docToRank: Uint32Array }> {
    const slots = this.size;
    const ranked = await this.rankIds(pacer);
    const n = ranked.length;
    await this.writeIds(out, ranked);
    this.idBytes.release();
    this.idEnds.release();

    const { rankOfDoc, docOfSlot } = this.orderByWeight(ranked, slots);
    release(ranked);
    const weight = new Uint32Array(n);
    const slotWeights = this.weight.view();
    for (let s = 0; s < slots; s++) if (docOfSlot[s] !== NONE) weight[docOfSlot[s]!] = slotWeights[s]!;
    this.weight.release();
    await out.add(SECTIONS.weight, weight);
    release(weight);
    await out.add(SECTIONS.docToRank, rankOfDoc);
    const rankToDoc = invert(rankOfDoc);
    await out.add(SECTIONS.rankToDoc, rankToDoc);
    release(rankToDoc);
    return { n, docOfSlot, docToRank: rankOfDoc };
  }

  /** lat, lon and the geo order; returns the geo order (geoDocs). */
  private async writeGeo(out: SegmentFileWriter, docOfSlot: Uint32Array, n: number): Promise<Uint32Array> {
    if (this.geoSlots.length === 0) {
      // Most indexes have no coordinates: two columns of NaN, written a chunk at a time, not 16
      // bytes a record held in memory.
      const nothing = new Float64Array(Math.min(n, WRITE_CHUNK / 8)).fill(NaN);
      for (const key of [SECTIONS.latitude, SECTIONS.longitude]) {
        const put = out.reserve(key, n);
        for (let at = 0; at < n; at += nothing.length) await put(nothing.subarray(0, Math.min(nothing.length, n - at)), at);
      }
      await out.add(SECTIONS.geoCodes, new Uint32Array(0));
      await out.add(SECTIONS.geoDocs, new Uint32Array(0));
      return new Uint32Array(0);
    }
    const lat = new Float64Array(n).fill(NaN);
    const lon = new Float64Array(n).fill(NaN);
    const geoSlots = this.geoSlots.view();
    for (let i = 0; i < geoSlots.length; i++) {
      const d = docOfSlot[geoSlots[i]!]!;
      if (d === NONE) continue;
      lat[d] = this.geoLat.get(i);
      lon[d] = this.geoLon.get(i);
    }
    this.geoSlots.release();
    this.geoLat.release();
    this.geoLon.release();
    const { geoCodes, geoDocs } = buildGeo(lat, lon);
    await out.add(SECTIONS.latitude, lat);
    await out.add(SECTIONS.longitude, lon);
    release(lat);
    release(lon);
    await out.add(SECTIONS.geoCodes, geoCodes);
    release(geoCodes);
    await out.add(SECTIONS.geoDocs, geoDocs);
    return geoDocs;
  }

  /** Pass 1 over the slot log: where each doc's record lies in records.bin. */
  private async writeRecordLocations(out: SegmentFileWriter, docOfSlot: Uint32Array, n: number, pacer: Pacer): Promise<void> {
    const recOffsets = new Float64Array(n);
    const recLengths = new Uint32Array(n);
    let offset = 0;
    await this.forEachSlot(docOfSlot, pacer, (d, reader) => {
      const length = reader.next();
      reader.skip(reader.next());
      reader.skip(reader.next());
      skipFilters(reader);
      if (d !== NONE) {
        recOffsets[d] = offset;
        recLengths[d] = length;
      }
      offset += length;
    });
    await out.add(SECTIONS.recordOffsets, recOffsets);
    await out.add(SECTIONS.recordLengths, recLengths);
    release(recOffsets);
    release(recLengths);
  }

  /**
   * Pass 2: how many title terms each doc has, as the start offsets of its entries in the forward
   * index. A pass of its own, not part of pass 1, so that the record locations are freed first.
   */
  private async countTitleTerms(docOfSlot: Uint32Array, n: number, pacer: Pacer): Promise<{ fwdOffsets: Uint32Array | null; maxTitleTokens: number }> {
    const fwdOffsets = new Uint32Array(n + 1);
    await this.forEachSlot(docOfSlot, pacer, (d, reader) => {
      reader.next();
      const titleCount = reader.next();
      reader.skip(titleCount);
      reader.skip(reader.next());
      skipFilters(reader);
      if (d !== NONE) fwdOffsets[d + 1] = titleCount;
    });
    let maxTitleTokens = 0;
    let total = 0;
    for (let d = 0; d < n; d++) {
      maxTitleTokens = Math.max(maxTitleTokens, fwdOffsets[d + 1]!);
      total += fwdOffsets[d + 1]!;
      // The offsets are 32-bit: past 4G entries they would wrap around silently.
      if (total > 0xffff_ffff) throw new Error("more than 4G title term entries in one segment");
      fwdOffsets[d + 1] = total;
    }
    return { fwdOffsets, maxTitleTokens };
  }

  /**
   * Passes after the filters: each doc's title terms in final term ids, the forward index (the postings read
   * it back), filled a window of documents per pass so that it is never whole in memory.
   */
  private async writeForwardIndex(
    out: SegmentFileWriter,
    docOfSlot: Uint32Array,
    fwdOffsets: Uint32Array,
    finalTerm: Uint32Array,
    pacer: Pacer,
  ): Promise<void> {
    const n = fwdOffsets.length - 1;
    await out.add(SECTIONS.forwardOffsets, fwdOffsets);
    const put = out.reserve(SECTIONS.forwardTerms, fwdOffsets[n]!);
    const { windows, largest } = splitIntoWindows(n, (doc) => fwdOffsets[doc]!, this.postingWindow / 4);
    const buffer = new Uint32Array(largest);
    for (let w = 0; w + 1 < windows.length; w++) {
      const first = windows[w]!;
      const last = windows[w + 1]!;
      const tokens = buffer.subarray(0, fwdOffsets[last]! - fwdOffsets[first]!);
      await this.gatherTitleTerms(docOfSlot, fwdOffsets, finalTerm, pacer, first, last, tokens);
      await put(tokens, fwdOffsets[first]!);
    }
    release(buffer);
    release(fwdOffsets);
  }

  /**
   * One pass over the slot log: the title terms, in final term ids, of the docs in [first, last),
   * into `into`, which starts at starts[first].
   */
  private async gatherTitleTerms(
    docOfSlot: Uint32Array,
    starts: Uint32Array,
    finalTerm: Uint32Array,
    pacer: Pacer,
    first: number,
    last: number,
    into: Uint32Array,
  ): Promise<void> {
    const base = starts[first]!;
    await this.forEachSlot(docOfSlot, pacer, (d, reader) => {
      reader.next();
      const count = reader.next();
      if (d < first || d >= last) reader.skip(count);
      else for (let i = 0, at = starts[d]! - base; i < count; i++) into[at + i] = finalTerm[reader.next()]!;
      reader.skip(reader.next());
      skipFilters(reader);
    });
  }

  /** The filter columns, as many per pass over the slot log as fit in a posting window. */
  private async writeFilters(out: SegmentFileWriter, docOfSlot: Uint32Array, n: number, pacer: Pacer): Promise<string[][]> {
    const filterPaths = this.filters.map((c) => c.path);
    const perPass = Math.max(1, Math.floor(this.postingWindow / (9 * Math.max(1, n))));
    for (let first = 0; first < filterPaths.length; first += perPass) {
      const count = Math.min(perPass, filterPaths.length - first);
      const kinds = Array.from({ length: count }, () => new Uint8Array(n));
      const nums = Array.from({ length: count }, () => new Float64Array(n));
      await this.forEachSlot(docOfSlot, pacer, (d, reader) => {
        reader.next();
        reader.skip(reader.next());
        reader.skip(reader.next());
        for (let values = reader.next(); values > 0; values--) {
          const column = reader.next() - first;
          const kind = reader.next();
          const num = kind === KIND_NUMBER ? reader.nextNumber() : 0;
          if (d === NONE || column < 0 || column >= count) continue;
          kinds[column]![d] = kind;
          nums[column]![d] = num;
        }
      });
      for (let c = 0; c < count; c++) {
        const sections = filterColumnSections(first + c);
        await out.add(sections.kinds, kinds[c]!);
        await out.add(sections.values, nums[c]!);
        release(kinds[c]!);
        release(nums[c]!);
      }
    }
    return filterPaths;
  }

  /** Closes and removes everything written. */
  async abort(): Promise<void> {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed by finish()
    }
    this.log.remove();
    await fs.promises.rm(this.dir, { recursive: true, force: true });
  }

  /** The live slots (the last add of each id) in id order. */
  private async rankIds(pacer: Pacer): Promise<Uint32Array> {
    const bytes = this.idBytes.view();
    const ends = this.idEnds.view();
    /** Byte order of the UTF-8 ids, which is their code point order. */
    const compareIds = (a: number, b: number): number => {
      let i = a === 0 ? 0 : ends[a - 1]!;
      let j = b === 0 ? 0 : ends[b - 1]!;
      const endA = ends[a]!;
      const endB = ends[b]!;
      for (; i < endA && j < endB; i++, j++) {
        const difference = bytes[i]! - bytes[j]!;
        if (difference !== 0) return difference;
      }
      return endA - i - (endB - j);
    };
    // By id, equal ids in slot order (the sort is stable); then compacted in place.
    const bySlotId = await sortIndices(ends.length, compareIds, pacer);
    let live = 0;
    for (let i = 0; i < bySlotId.length; i++) {
      const s = bySlotId[i]!;
      // Within a run of equal ids the last slot (the latest add) wins.
      if (i + 1 < bySlotId.length && compareIds(bySlotId[i + 1]!, s) === 0) continue;
      bySlotId[live++] = s;
    }
    return bySlotId.subarray(0, live);
  }

  /**
   * Numbers documents by (weight desc, id asc). rankOfDoc: each document's position in id order;
   * docOfSlot: each slot's document, NONE for a replaced duplicate.
   */
  private orderByWeight(ranked: Uint32Array, slots: number): { rankOfDoc: Uint32Array; docOfSlot: Uint32Array } {
    const weights = this.weight.view();
    const rankOfDoc = sortByKey(ranked.length, (r) => NONE - weights[ranked[r]!]!);
    const docOfSlot = new Uint32Array(slots).fill(NONE);
    for (let d = 0; d < rankOfDoc.length; d++) docOfSlot[ranked[rankOfDoc[d]!]!] = d;
    return { rankOfDoc, docOfSlot };
  }

  /**
   * The ids of `ranked` slots, in that order, as the string table sections idBytes and idOffsets,
   * written a chunk at a time (a whole copy would be another 230 MB at 20M records).
   */
  private async writeIds(out: SegmentFileWriter, ranked: Uint32Array): Promise<void> {
    const bytes = this.idBytes.view();
    const ends = this.idEnds.view();
    const startOf = (s: number) => (s === 0 ? 0 : ends[s - 1]!);
    let total = 0;
    for (let r = 0; r < ranked.length; r++) total += ends[ranked[r]!]! - startOf(ranked[r]!);
    if (total > 0xffff_ffff) throw new Error("id table larger than 4 GiB");
    const putBytes = out.reserve(SECTIONS.idBytes, total);
    const putOffsets = out.reserve(SECTIONS.idOffsets, ranked.length + 1);
    const chunk = new Uint8Array(WRITE_CHUNK);
    const offsets = new Uint32Array(WRITE_CHUNK / 4);
    let used = 0;
    let bytesPut = 0;
    let offsetCount = 0;
    let offsetsPut = 0;
    let at = 0;
    for (let r = 0; r <= ranked.length; r++) {
      if (offsetCount === offsets.length) {
        await putOffsets(offsets, offsetsPut);
        offsetsPut += offsetCount;
        offsetCount = 0;
      }
      offsets[offsetCount++] = at;
      if (r === ranked.length) break;
      const s = ranked[r]!;
      const start = startOf(s);
      const length = ends[s]! - start;
      if (used + length > chunk.length) {
        await putBytes(chunk.subarray(0, used), bytesPut);
        bytesPut += used;
        used = 0;
      }
      if (length > chunk.length) {
        await putBytes(bytes.subarray(start, start + length), bytesPut);
        bytesPut += length;
      } else {
        for (let i = 0; i < length; i++) chunk[used++] = bytes[start + i]!;
      }
      at += length;
    }
    await putBytes(chunk.subarray(0, used), bytesPut);
    await putOffsets(offsets.subarray(0, offsetCount), offsetsPut);
  }

  /** Temporary term ids in byte (code point) order of the terms. */
  private sortTerms(pacer: Pacer): Promise<Uint32Array> {
    const terms = this.terms;
    return sortIndices(terms.length, (a, b) => compareCodePoints(terms[a]!, terms[b]!), pacer);
  }

  /**
   * Passes 3 and on: the docs of each term found in data text (and not in the same doc's title):
   * one pass counting, then a window of terms per pass over the slot log. The slot log is in
   * arrival order, so each run is filled out of document order and sorted, as the id orders of the
   * split postings are; the data terms are never all in memory at once (free text in `data` can
   * be many per record).
   */
  private async writeDataPostings(out: SegmentFileWriter, docOfSlot: Uint32Array, finalTerm: Uint32Array, pacer: Pacer): Promise<void> {
    const termCount = finalTerm.length;
    const offsets = new Uint32Array(termCount + 1);
    await this.forEachDataTerm(docOfSlot, finalTerm, pacer, (_doc, term) => offsets[term + 1]!++);
    let total = 0;
    for (let t = 1; t <= termCount; t++) {
      total += offsets[t]!;
      if (total > 0xffff_ffff) throw new Error("more than 4G data term entries in one segment");
      offsets[t] = total;
    }
    await out.add(SECTIONS.dataOffsets, offsets);
    const put = out.reserve(SECTIONS.dataDocs, total);
    const { windows, largest } = splitIntoWindows(termCount, (t) => offsets[t]!, this.postingWindow / 4);
    const buffer = new Uint32Array(largest);
    const cursor = offsets.slice();
    const sorter = new RunSorter(longestRun(offsets), pacer);
    for (let w = 0; w + 1 < windows.length; w++) {
      const low = windows[w]!;
      const high = windows[w + 1]!;
      const base = offsets[low]!;
      const part = buffer.subarray(0, offsets[high]! - base);
      if (part.length === 0) continue;
      await this.forEachDataTerm(docOfSlot, finalTerm, pacer, (doc, term) => {
        if (term >= low && term < high) part[cursor[term]!++ - base] = doc;
      });
      await sorter.sortRuns(part, offsets, low, high, docOfSlot.length);
      await put(part, base);
    }
    release(buffer);
    release(cursor);
    release(offsets);
    sorter.release();
  }

  /** One pass over the slot log: each live doc's data terms, in final term ids. */
  private async forEachDataTerm(docOfSlot: Uint32Array, finalTerm: Uint32Array, pacer: Pacer, visit: (doc: number, term: number) => void): Promise<void> {
    await this.forEachSlot(docOfSlot, pacer, (d, reader) => {
      reader.next();
      reader.skip(reader.next());
      const count = reader.next();
      if (d === NONE) reader.skip(count);
      else for (let i = 0; i < count; i++) visit(d, finalTerm[reader.next()]!);
      skipFilters(reader);
    });
  }

  /**
   * One pass over the slot log in arrival order: `visit` gets each slot's document (NONE for a
   * replaced duplicate) and the reader at the slot's first word, and reads or skips the whole slot
   * (layout: writeSlot).
   */
  private async forEachSlot(docOfSlot: Uint32Array, pacer: Pacer, visit: (doc: number, reader: SlotLogReader) => void): Promise<void> {
    const reader = this.log.reader();
    for (let s = 0; s < docOfSlot.length; s++) {
      if ((s & CHECK_EVERY) === 0 && pacer.due()) await pacer.pause();
      visit(docOfSlot[s]!, reader);
    }
  }


  /** Prefixes of 1..maxPrefix characters of every title term, and their split postings. */
  private async writePrefixPostings(out: SegmentFileWriter, termOrder: Uint32Array, orders: DocOrders, pacer: Pacer): Promise<void> {
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

    const table = await SortedStrings.pack(order.length, (i) => prefixList[order[i]!]!, pacer);
    prefixIds.clear();
    prefixList.length = 0;
    await out.add(SECTIONS.prefixDictBytes, table.bytes);
    await out.add(SECTIONS.prefixDictOffsets, table.offsets);
    // A term's prefixes ("a", "am", "amb") are ascending prefix ids: a window of ids that misses
    // [first, last] has none of them, and the term is passed over without looking at each.
    const firstPrefix = new Uint32Array(termOrder.length).fill(NONE);
    const lastPrefix = new Uint32Array(termOrder.length);
    for (let t = 0; t < termOrder.length; t++) {
      for (let k = 0; k < L && termPrefixes[t * L + k] !== NONE; k++) {
        if (k === 0) firstPrefix[t] = termPrefixes[t * L]!;
        lastPrefix[t] = termPrefixes[t * L + k]!;
      }
    }
    await writeSplitPostings(out, PREFIX_POSTINGS, order.length, orders, this.postingWindow, pacer, (tokens, from, to, emit, low, high) => {
      for (let i = from; i < to; i++) {
        const t = tokens[i]!;
        if (firstPrefix[t]! >= high || lastPrefix[t]! < low) continue;
        for (let k = 0; k < L; k++) {
          const p = termPrefixes[t * L + k]!;
          if (p === NONE) break;
          emit(p, i === from);
        }
      }
    });
  }
}

/** Skips a slot's filter values. */
function skipFilters(reader: SlotLogReader): void {
  for (let values = reader.next(); values > 0; values--) {
    reader.next();
    if (reader.next() === KIND_NUMBER) reader.skip(2);
  }
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
