// Writes the filter columns: a column per numeric or boolean data path, numbered in order of first
// appearance, its values collected into the slot log as records arrive and written column by
// column once every record is in.
import { FILTERS, type SlotPasses } from "../build/slot-codec.ts";
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { filterColumnSections } from "../segment/sections.ts";
import { release } from "../util/arrays.ts";
import type { FilterLeaf } from "./data-fields.ts";
import { KIND_FALSE, KIND_NUMBER, KIND_TRUE } from "./filter-columns.ts";

const NONE = 0xffff_ffff;

interface FilterColumn {
  path: string[];
  index: number;
}

/** Filter columns by path, one level per key (no key strings built per value). */
interface ColumnNode {
  column?: FilterColumn;
  children: Map<string, ColumnNode>;
}

export class FilterColumnsWriter {
  private readonly columns: FilterColumn[] = [];
  private readonly tree: ColumnNode = { children: new Map() };

  /** Appends a record's value at a data path to `into` as (column, kind, number), adding a column for a new path. */
  add(leafPath: readonly string[], value: FilterLeaf, into: number[]): void {
    let node = this.tree;
    for (const key of leafPath) {
      let child = node.children.get(key);
      if (child === undefined) {
        child = { children: new Map() };
        node.children.set(key, child);
      }
      node = child;
    }
    let column = node.column;
    if (column === undefined) {
      column = { path: [...leafPath], index: this.columns.length };
      node.column = column;
      this.columns.push(column);
    }
    if (typeof value === "number") into.push(column.index, KIND_NUMBER, value);
    else into.push(column.index, value ? KIND_TRUE : KIND_FALSE, 0);
  }

  /** Writes the columns, as many per pass over the slot log as fit in a posting window; returns their paths. */
  async write(out: SegmentFileWriter, slots: SlotPasses, n: number, windowBytes: number): Promise<string[][]> {
    const filterPaths = this.columns.map((c) => c.path);
    const perPass = Math.max(1, Math.floor(windowBytes / (9 * Math.max(1, n))));
    for (let first = 0; first < filterPaths.length; first += perPass) {
      const count = Math.min(perPass, filterPaths.length - first);
      const kinds = Array.from({ length: count }, () => new Uint8Array(n));
      const nums = Array.from({ length: count }, () => new Float64Array(n));
      await slots.forEach(FILTERS, (d, slot) => {
        if (d === NONE) return;
        const { filterColumns, filterKinds, filterValues } = slot;
        for (let i = 0, values = slot.filterCount; i < values; i++) {
          const column = filterColumns[i]! - first;
          if (column < 0 || column >= count) continue;
          kinds[column]![d] = filterKinds[i]!;
          nums[column]![d] = filterValues[i]!;
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
}
