// Builds a segment from a stream of records (bulk ingest or checkpoint) by sequencing one writer per
// part. Records go to records.bin as they arrive (store/); ids, weights and title length keys stay
// in typed arrays (columns/ids-writer.ts: the document orders need them), and the rest of each record's index data
// goes to a slot log on disk (slot-log.ts, laid out by slot-codec.ts). finish turns both into the
// sections of segment/sections.ts, written one at a time (docs/engine.md E12). Nothing is
// visible until the catalog says so.
import fs from "node:fs";
import path from "node:path";
import type { SearchRecord } from "../../../ports/engine.ts";
import { syncDirectory } from "../../../durable.ts";
import { walkData } from "../columns/data-fields.ts";
import { GeoWriter } from "../columns/geo-writer.ts";
import { IdsWriter } from "../columns/ids-writer.ts";
import { ValueColumnsWriter } from "../columns/value-columns-writer.ts";
import { titleLengthKey } from "../columns/title-length.ts";
import { writeDataPostings } from "../postings/data-postings-writer.ts";
import { countTitleTerms, writeForwardIndex } from "../postings/forward-index-writer.ts";
import { docOrders, writePrefixPostings, writeTitlePostings } from "../postings/split-postings-writer.ts";
import { INDEX_FILE, type SegmentMeta } from "../segment/meta.ts";
import { SegmentFileWriter } from "../segment/segment-file.ts";
import { RecordsWriter } from "../store/records-writer.ts";
import { TermDictWriter } from "../termdict/term-dict-writer.ts";
import { invert, release } from "../util/arrays.ts";
import { Pacer } from "../util/pacer.ts";
import { SlotInput, SlotPasses, appendSlot } from "./slot-codec.ts";
import { SlotLog } from "./slot-log.ts";

/**
 * Largest window of a posting section filled in memory at once (bytes). Bigger sections are filled
 * window by window, each pass visiting every document again: a segment of 20M small records has
 * a 1.6 GB prefix section, which must not be in memory whole (the 2 GB ingest target).
 */
const POSTING_WINDOW_BYTES = 128 << 20;
/** The builder's temporary per-record log (slot-log.ts), removed when the build ends. */
const SLOT_LOG_FILE = "slots.tmp";

export class SegmentBuilder {
  readonly dir: string;
  private readonly maxPrefix: number;
  private readonly postingWindow: number;
  private readonly records: RecordsWriter;
  private readonly ids = new IdsWriter();
  private readonly geo = new GeoWriter();
  private readonly terms = new TermDictWriter();
  private readonly values = new ValueColumnsWriter();
  /** Per slot: JSON length, title and data term ids, data values (slot-codec.ts). */
  private readonly log: SlotLog;
  /** The slot being added. */
  private readonly slot = new SlotInput();

  private constructor(dir: string, maxPrefix: number, postingWindow: number) {
    this.dir = dir;
    this.maxPrefix = maxPrefix;
    this.postingWindow = postingWindow;
    this.records = new RecordsWriter(dir);
    this.log = new SlotLog(path.join(dir, SLOT_LOG_FILE));
  }

  /** `postingWindow`: see POSTING_WINDOW_BYTES; tests make it tiny to fill in many windows. */
  static async create(dir: string, maxPrefix: number, postingWindow = POSTING_WINDOW_BYTES): Promise<SegmentBuilder> {
    await fs.promises.mkdir(dir, { recursive: true });
    return new SegmentBuilder(dir, maxPrefix, postingWindow);
  }

  get size(): number {
    return this.ids.size;
  }

  /** Adds a record; a later record with the same id replaces the earlier one. */
  add(record: SearchRecord): void {
    const slot = this.ids.size;
    const jsonBytes = this.records.append(record);
    const { title, data, values } = this.slot;
    this.terms.addTitle(record.title, slot, title);
    // Tokens as the forward index will hold them; units of the title as stored.
    this.ids.add(record.id, record.weight ?? 0, titleLengthKey(title.length, record.title.length));
    if (record.latitude !== undefined && record.longitude !== undefined) {
      this.geo.add(slot, Number(record.latitude), Number(record.longitude));
    }
    walkData(
      record.data,
      (text) => this.terms.addText(text, slot, data),
      (path, value) => this.values.add(path, value, values),
    );
    appendSlot(this.log, jsonBytes, this.slot);
  }

  /**
   * Builds the index and makes both files durable. Each section is written as soon as it is built
   * and dropped, and the builder's own per-record data is released after its last use, so the peak
   * is the inputs plus the few sections later ones are derived from, not the whole index at once.
   * The builder is spent afterwards.
   */
  async finishFiles(): Promise<SegmentMeta> {
    await this.records.finish();
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
   * Writes the sections part by part, in the order of sections.ts. Each writer returns only what
   * later ones need: arrays a long function still names stay reachable until it returns, and at
   * 20M records each is 80 to 160 MB. The few that are passed on are dropped (released, or set to
   * null) after their last use. The slot log is read in sequential passes (SlotPasses); the title
   * and prefix postings, the largest sections, are derived from the forward index read back from
   * the file.
   */
  private async writeSections(out: SegmentFileWriter): Promise<SegmentMeta> {
    const window = this.postingWindow;
    const pacer = new Pacer();
    const numbering = await this.ids.write(out, pacer);
    const { n, docToLengthRank } = numbering;
    let docOfSlot: Uint32Array | null = numbering.docOfSlot!;
    numbering.docOfSlot = null;
    const geoDocs = await this.geo.write(out, docOfSlot, n);
    const slots = new SlotPasses(this.log, docOfSlot, pacer);
    await this.records.writeLocations(out, slots, n);
    const titleCounts = await countTitleTerms(slots, n);
    const { maxTitleTokens } = titleCounts;
    const termOrder = await this.terms.sort(pacer);
    const termCount = termOrder.length;
    const finalTerm = invert(termOrder);
    await writeDataPostings(out, slots, finalTerm, window, pacer);
    const valueColumns = await this.values.write(out, slots, n, window);
    await writeForwardIndex(out, slots, titleCounts.offsets!, finalTerm, window);
    titleCounts.offsets = null;
    release(docOfSlot);
    docOfSlot = null;

    const orders = docOrders(n, docToLengthRank, geoDocs);
    release(geoDocs);
    await writeTitlePostings(out, termCount, orders, window, pacer);
    const prefixes = await this.terms.writePrefixes(out, termOrder, this.maxPrefix, pacer);
    await writePrefixPostings(out, prefixes, termCount, this.maxPrefix, orders, window, pacer);
    release(prefixes.ofTerm);
    release(docToLengthRank);
    if (orders.geoPosition !== null) release(orders.geoPosition);

    await this.terms.write(out, termOrder, pacer);
    return {
      docCount: n,
      maxPrefix: this.maxPrefix,
      maxTitleTokens,
      // Numbers and booleans are in the value columns only (D-200): no filter columns.
      filterPaths: [],
      laterRuns: true,
      valuePaths: valueColumns.paths,
      valueOverflow: valueColumns.overflow,
      scalarsKept: true,
    };
  }

  /** Closes and removes everything written. */
  async abort(): Promise<void> {
    this.records.abort();
    this.log.remove();
    await fs.promises.rm(this.dir, { recursive: true, force: true });
  }
}
