// Value columns: each data path (data.a.b) some record of a segment reaches through objects is a
// column of the values there per document, as ids into the column's dictionary of distinct values
// (sections.ts, valueColumnSections): a scalar's value, or an array's elements (each distinct
// element once), and whether the path is present at all. Filters on strings, on array elements and
// EXISTS, and facet counts, read them instead of the records.
import type { ValueColumnSections } from "../segment/sections.ts";
import type { ElementArrays, SectionKey } from "../segment/segment-file.ts";

export { compareFacetValues, isFacetValue, type FacetValue } from "../../../search/facets.ts";
import type { FacetValue } from "../../../search/facets.ts";

export const NO_VALUE = 0xffff_ffff;

type Get = <T extends "u8" | "u32" | "f64">(key: SectionKey<T>) => ElementArrays[T];

export class ValueColumn {
  /** Per document: 0 when the path is missing or null, 2 when it holds an array, else 1. */
  readonly present: Uint8Array;
  /** Empty when each document has at most one value (ids is then per document). */
  readonly offsets: Uint32Array;
  readonly ids: Uint32Array;
  readonly numbers: Float64Array;
  readonly booleans: Uint8Array;
  /** Value id v's documents, ascending: postingDocs[postingOffsets[v], postingOffsets[v + 1]). */
  readonly postingOffsets: Uint32Array;
  readonly postingDocs: Uint32Array;
  private readonly stringBytes: Buffer;
  private readonly stringOffsets: Uint32Array;
  /** Strings decoded so far, by string index. */
  private readonly decoded: (string | undefined)[] = [];

  constructor(sections: ValueColumnSections, get: Get) {
    this.present = get(sections.present);
    this.offsets = get(sections.offsets);
    this.ids = get(sections.ids);
    this.numbers = get(sections.numbers);
    this.booleans = get(sections.booleans);
    const bytes = get(sections.stringBytes);
    this.stringBytes = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.stringOffsets = get(sections.stringOffsets);
    this.postingOffsets = get(sections.postingOffsets);
    this.postingDocs = get(sections.postingDocs);
  }

  /** The number of documents with value id v. */
  postingSize(id: number): number {
    return this.postingOffsets[id + 1]! - this.postingOffsets[id]!;
  }

  postings(id: number): Uint32Array {
    return this.postingDocs.subarray(this.postingOffsets[id]!, this.postingOffsets[id + 1]!);
  }

  get multiValued(): boolean {
    return this.offsets.length > 0;
  }

  /** The number of distinct values (ids are [0, size)). */
  get size(): number {
    return this.numbers.length + this.booleans.length + this.stringOffsets.length - 1;
  }

  /** Ids [0, numberEnd) are numbers, [numberEnd, booleanEnd) booleans, the rest strings. */
  get numberEnd(): number {
    return this.numbers.length;
  }

  get booleanEnd(): number {
    return this.numbers.length + this.booleans.length;
  }

  value(id: number): FacetValue {
    if (id < this.numbers.length) return this.numbers[id]!;
    if (id < this.booleanEnd) return this.booleans[id - this.numbers.length] === 1;
    return this.string(id - this.booleanEnd);
  }

  private string(i: number): string {
    let s = this.decoded[i];
    if (s === undefined) {
      s = this.stringBytes.toString("utf8", this.stringOffsets[i]!, this.stringOffsets[i + 1]!);
      this.decoded[i] = s;
    }
    return s;
  }

  /** The document's value when it is a single number or string (not in an array), else null. */
  sortValue(doc: number): number | string | null {
    if (this.present[doc] !== 1) return null;
    let id = NO_VALUE;
    if (!this.multiValued) id = this.ids[doc]!;
    else if (this.offsets[doc + 1]! - this.offsets[doc]! === 1) id = this.ids[this.offsets[doc]!]!;
    if (id === NO_VALUE || (id >= this.numberEnd && id < this.booleanEnd)) return null;
    return this.value(id) as number | string;
  }

  /** The id of a value, or -1 when no document has it. */
  idOf(value: FacetValue): number {
    if (typeof value === "boolean") {
      for (let i = 0; i < this.booleans.length; i++) if ((this.booleans[i] === 1) === value) return this.numberEnd + i;
      return -1;
    }
    if (typeof value === "number") {
      const at = this.firstNumberAtLeast(value);
      return at < this.numbers.length && this.numbers[at] === value ? at : -1;
    }
    let lo = 0;
    let hi = this.stringOffsets.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.string(mid) < value) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.stringOffsets.length - 1 && this.string(lo) === value ? this.booleanEnd + lo : -1;
  }

  /** The first number id whose number is >= value (numberEnd when none). */
  firstNumberAtLeast(value: number): number {
    return this.search(value, false);
  }

  /** The first number id whose number is > value. */
  firstNumberAbove(value: number): number {
    return this.search(value, true);
  }

  private search(value: number, strict: boolean): number {
    const numbers = this.numbers;
    let lo = 0;
    let hi = numbers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (numbers[mid]! < value || (strict && numbers[mid] === value)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
