// The layout of one slot of the slot log (slot-log.ts), written once (appendSlot) and read once
// (SlotDecoder): what the builder learns about a record when it is added but needs only once every
// record is in. In 32-bit words:
//
//   JSON length | title count, title term ids… | data count, data term ids… |
//   filter value count, then per value: column, kind, and for KIND_NUMBER the value as two words |
//   value column entry count, then per entry: column, the builder's value id (NONE: present only)
//
// Term ids are the builder's temporary ones (in order of first use); data terms are those not
// already in the record's title or earlier in its data.
import { KIND_NUMBER } from "../columns/filter-columns.ts";
import type { Pacer } from "../util/pacer.ts";
import type { SlotLog, SlotLogReader } from "./slot-log.ts";

const NONE = 0xffff_ffff;
/** Slots between asking the pacer whether to give the event loop back. */
const CHECK_EVERY = 0x3fff;

/** A slot being collected by the builder, appended (and emptied) by appendSlot. */
export class SlotInput {
  readonly title: number[] = [];
  readonly data: number[] = [];
  /** Triples: column, kind, number (0 unless the kind is KIND_NUMBER). */
  readonly filters: number[] = [];
  /** Pairs: value column, value id (columns/value-columns-writer.ts). */
  readonly values: number[] = [];
}

export function appendSlot(log: SlotLog, jsonBytes: number, slot: SlotInput): void {
  log.push(jsonBytes);
  for (const list of [slot.title, slot.data]) {
    log.push(list.length);
    for (const t of list) log.push(t);
    list.length = 0;
  }
  const filters = slot.filters;
  log.push(filters.length / 3);
  for (let i = 0; i < filters.length; i += 3) {
    log.push(filters[i]!);
    log.push(filters[i + 1]!);
    if (filters[i + 1] === KIND_NUMBER) log.pushNumber(filters[i + 2]!);
  }
  filters.length = 0;
  const values = slot.values;
  log.push(values.length / 2);
  for (const word of values) log.push(word);
  values.length = 0;
}

/** Parts of a slot a pass decodes (a bit set); the others are skipped. The counts are always set. */
export const TITLE = 1;
export const DATA = 2;
export const FILTERS = 4;
export const VALUES = 8;

/** Reads slots one after another; after next(), the fields hold the slot read. */
export class SlotDecoder {
  jsonLength = 0;
  titleCount = 0;
  /** title[0, titleCount) when TITLE was decoded. */
  title = new Uint32Array(64);
  dataCount = 0;
  /** data[0, dataCount) when DATA was decoded. */
  data = new Uint32Array(64);
  filterCount = 0;
  /** filterColumns, filterKinds, filterValues [0, filterCount) when FILTERS was decoded. */
  filterColumns = new Uint32Array(16);
  filterKinds = new Uint32Array(16);
  filterValues = new Float64Array(16);
  valueCount = 0;
  /** valueColumns, valueIds [0, valueCount) when VALUES was decoded. */
  valueColumns = new Uint32Array(16);
  valueIds = new Uint32Array(16);
  private readonly reader: SlotLogReader;

  constructor(reader: SlotLogReader) {
    this.reader = reader;
  }

  next(parts: number): void {
    const reader = this.reader;
    this.jsonLength = reader.next();
    const titleCount = reader.next();
    this.titleCount = titleCount;
    if ((parts & TITLE) === 0) reader.skip(titleCount);
    else {
      if (titleCount > this.title.length) this.title = new Uint32Array(titleCount * 2);
      const title = this.title;
      for (let i = 0; i < titleCount; i++) title[i] = reader.next();
    }
    const dataCount = reader.next();
    this.dataCount = dataCount;
    if ((parts & DATA) === 0) reader.skip(dataCount);
    else {
      if (dataCount > this.data.length) this.data = new Uint32Array(dataCount * 2);
      const data = this.data;
      for (let i = 0; i < dataCount; i++) data[i] = reader.next();
    }
    const filterCount = reader.next();
    this.filterCount = filterCount;
    const decodeFilters = (parts & FILTERS) !== 0;
    if (decodeFilters && filterCount > this.filterColumns.length) {
      this.filterColumns = new Uint32Array(filterCount * 2);
      this.filterKinds = new Uint32Array(filterCount * 2);
      this.filterValues = new Float64Array(filterCount * 2);
    }
    const { filterColumns, filterKinds, filterValues } = this;
    for (let i = 0; i < filterCount; i++) {
      const column = reader.next();
      const kind = reader.next();
      const value = kind === KIND_NUMBER ? reader.nextNumber() : 0;
      if (decodeFilters) {
        filterColumns[i] = column;
        filterKinds[i] = kind;
        filterValues[i] = value;
      }
    }
    const valueCount = reader.next();
    this.valueCount = valueCount;
    if ((parts & VALUES) === 0) reader.skip(valueCount * 2);
    else {
      if (valueCount > this.valueColumns.length) {
        this.valueColumns = new Uint32Array(valueCount * 2);
        this.valueIds = new Uint32Array(valueCount * 2);
      }
      const { valueColumns, valueIds } = this;
      for (let i = 0; i < valueCount; i++) {
        valueColumns[i] = reader.next();
        valueIds[i] = reader.next();
      }
    }
  }
}

/**
 * Sequential passes over the slot log, each in arrival order: `visit` gets each slot's document
 * (NONE for a replaced duplicate, whose parts are never decoded) and the decoder holding the slot.
 */
export class SlotPasses {
  private readonly log: SlotLog;
  private readonly docOfSlot: Uint32Array;
  private readonly pacer: Pacer;

  constructor(log: SlotLog, docOfSlot: Uint32Array, pacer: Pacer) {
    this.log = log;
    this.docOfSlot = docOfSlot;
    this.pacer = pacer;
  }

  /** The number of slots (documents and replaced duplicates). */
  get count(): number {
    return this.docOfSlot.length;
  }

  async forEach(parts: number, visit: (doc: number, slot: SlotDecoder) => void): Promise<void> {
    const decoder = new SlotDecoder(this.log.reader());
    const docOfSlot = this.docOfSlot;
    for (let s = 0; s < docOfSlot.length; s++) {
      if ((s & CHECK_EVERY) === 0 && this.pacer.due()) await this.pacer.pause();
      const doc = docOfSlot[s]!;
      decoder.next(doc === NONE ? 0 : parts);
      visit(doc, decoder);
    }
  }
}
