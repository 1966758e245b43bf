// The layout of one slot of the slot log (slot-log.ts), written once (appendSlot) and read once
// (SlotDecoder): what the builder learns about a record when it is added but needs only once every
// record is in. In 32-bit words:
//
//   JSON length | title count, title term ids… | data count, data term ids… |
//   value words (so passes that skip them skip at once), then per entry: column, a code (the
//   builder's id of a string, or NONE: present only, ARRAY, FALSE, TRUE, NUMBER) and after NUMBER
//   the number as two words
//
// Numbers and booleans need no dictionary while records arrive: each is stored once, in its
// value column (columns/value-columns-writer.ts), which serves filters, facets and sort.
// Term ids are the builder's temporary ones (in order of first use); data terms are those not
// already in the record's title or earlier in its data.
import type { Pacer } from "../util/pacer.ts";
import type { SlotLog, SlotLogReader } from "./slot-log.ts";

const NONE = 0xffff_ffff;
/** Value codes above any string id (columns/value-columns-writer.ts). */
export const VALUE_NONE = NONE;
export const VALUE_ARRAY = 0xffff_fffe;
export const VALUE_FALSE = 0xffff_fffd;
export const VALUE_TRUE = 0xffff_fffc;
/** The entry's number follows the code. */
export const VALUE_NUMBER = 0xffff_fffb;
/** Slots between asking the pacer whether to give the event loop back. */
const CHECK_EVERY = 0x3fff;

/** A slot being collected by the builder, appended (and emptied) by appendSlot. */
export class SlotInput {
  readonly title: number[] = [];
  readonly data: number[] = [];
  /** Value column, code, and after VALUE_NUMBER the number (columns/value-columns-writer.ts). */
  readonly values: number[] = [];
}

export function appendSlot(log: SlotLog, jsonBytes: number, slot: SlotInput): void {
  log.push(jsonBytes);
  for (const list of [slot.title, slot.data]) {
    log.push(list.length);
    for (const t of list) log.push(t);
    list.length = 0;
  }
  const values = slot.values;
  // Two words an entry, two more for a number (three array elements for two words and one number).
  let numbers = 0;
  for (let i = 0; i < values.length; i += values[i + 1] === VALUE_NUMBER ? 3 : 2)
    if (values[i + 1] === VALUE_NUMBER) numbers++;
  log.push(values.length + numbers);
  for (let i = 0; i < values.length; ) {
    log.push(values[i]!);
    const code = values[i + 1]!;
    log.push(code);
    if (code === VALUE_NUMBER) {
      log.pushNumber(values[i + 2]!);
      i += 3;
    } else i += 2;
  }
  values.length = 0;
}

/** Parts of a slot a pass decodes (a bit set); the others are skipped. The counts are always set. */
export const TITLE = 1;
export const DATA = 2;
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
  /** Entries decoded (0 when VALUES was not). */
  valueCount = 0;
  /** valueColumns, valueCodes, valueNumbers (for VALUE_NUMBER) [0, valueCount) when VALUES was decoded. */
  valueColumns = new Uint32Array(16);
  valueCodes = new Uint32Array(16);
  valueNumbers = new Float64Array(16);
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
    const words = reader.next();
    if ((parts & VALUES) === 0) {
      this.valueCount = 0;
      reader.skip(words);
      return;
    }
    // At most words / 2 entries.
    if (words > this.valueColumns.length * 2) {
      this.valueColumns = new Uint32Array(words);
      this.valueCodes = new Uint32Array(words);
      this.valueNumbers = new Float64Array(words);
    }
    const { valueColumns, valueCodes, valueNumbers } = this;
    let count = 0;
    for (let read = 0; read < words; count++) {
      valueColumns[count] = reader.next();
      const code = reader.next();
      valueCodes[count] = code;
      read += 2;
      if (code === VALUE_NUMBER) {
        valueNumbers[count] = reader.nextNumber();
        read += 2;
      }
    }
    this.valueCount = count;
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
