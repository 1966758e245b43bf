// Distances and nearest-first enumeration. Documents with coordinates are sorted by a Z-order
// (Morton) code of their quantised position (the geo order), so every quadtree cell is a
// contiguous range of that order; a best-first walk over the cells (Hjaltason & Samet's
// incremental nearest neighbour) yields the members of a posting expression (in geo order) in
// exact distance order, opening only cells near the point that hold members.
import { lowerBound } from "../util/arrays.ts";
import type { Source } from "../postings/sources.ts";
import { END } from "../postings/sources.ts";

export const EARTH_RADIUS_M = 6_371_008.8;
const RAD = Math.PI / 180;
const CELL_BITS = 16;
/**
 * Cells with at most this many members are opened into their members. For an intersection the
 * count is an upper bound (its smallest input), so enumerating early stops a descent into cells
 * where the inputs never meet.
 */
const LEAF_SIZE = 32;

export function haversineMeters(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = (lat2 - lat1) * RAD;
  const dLon = (lon2 - lon1) * RAD;
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(lat1 * RAD) * Math.cos(lat2 * RAD) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_M * Math.asin(Math.min(1, Math.sqrt(a)));
}

function spreadBits(v: number): number {
  v = (v | (v << 8)) & 0x00ff00ff;
  v = (v | (v << 4)) & 0x0f0f0f0f;
  v = (v | (v << 2)) & 0x33333333;
  v = (v | (v << 1)) & 0x55555555;
  return v >>> 0;
}

function compactBits(v: number): number {
  v &= 0x55555555;
  v = (v | (v >>> 1)) & 0x33333333;
  v = (v | (v >>> 2)) & 0x0f0f0f0f;
  v = (v | (v >>> 4)) & 0x00ff00ff;
  v = (v | (v >>> 8)) & 0x0000ffff;
  return v;
}

const quantise = (value: number, min: number, span: number) =>
  Math.min((1 << CELL_BITS) - 1, Math.max(0, Math.floor(((value - min) / span) * (1 << CELL_BITS))));

/** Z-order code: longitude bits at even positions, latitude bits at odd positions. */
export function geoCode(lat: number, lon: number): number {
  return (spreadBits(quantise(lon, -180, 360)) | (spreadBits(quantise(lat, -90, 180)) << 1)) >>> 0;
}

/** A lower bound of the distance from (lat, lon) to any point of the box, in meters. */
function boxLowerBound(lat: number, lon: number, latMin: number, latMax: number, lonMin: number, lonMax: number): number {
  // Latitude difference alone bounds any great-circle distance.
  const dLat = lat < latMin ? latMin - lat : lat > latMax ? lat - latMax : 0;
  let bound = dLat;
  if (lon < lonMin || lon > lonMax) {
    // Every path into the box's longitude band crosses one of its bounding half-meridians.
    const gap = Math.min(angularGap(lon, lonMin), angularGap(lon, lonMax));
    const toMeridian = gap >= 90 ? 90 - Math.abs(lat) : Math.asin(Math.cos(lat * RAD) * Math.sin(gap * RAD)) / RAD;
    bound = Math.max(bound, toMeridian);
  }
  // Shaved so rounding never makes the bound exceed a true distance.
  return bound * RAD * EARTH_RADIUS_M * (1 - 1e-9) - 1e-6;
}

function angularGap(a: number, b: number): number {
  const d = Math.abs(a - b) % 360;
  return d > 180 ? 360 - d : d;
}

export interface GeoIndex {
  /** Morton codes of the documents with coordinates, ascending. */
  codes: Uint32Array;
  /** The documents, aligned with codes. */
  docs: Uint32Array;
  lat: Float64Array;
  lon: Float64Array;
}

interface Cell {
  level: number;
  prefix: number;
  /** Range of geo positions covered by the cell. */
  lo: number;
  hi: number;
}

/** Yields members (geo positions) in ascending distance from a point. */
export class NearestIterator {
  /** After next() returned true: the member's geo position and its distance. */
  position = -1;
  distance = 0;
  /** Cells opened plus members handed out: the work done so far, for budgets. */
  work = 0;

  private readonly index: GeoIndex;
  private readonly members: Source;
  private readonly lat: number;
  private readonly lon: number;
  // Binary min-heap of cells and members (a member is a cell with level -1 and lo = position),
  // keyed by distance (a lower bound for cells).
  private readonly keys: number[] = [];
  private readonly items: Cell[] = [];

  constructor(index: GeoIndex, members: Source, lat: number, lon: number) {
    this.index = index;
    this.members = members;
    this.lat = lat;
    this.lon = lon;
    if (index.codes.length > 0) this.push(0, { level: 0, prefix: 0, lo: 0, hi: index.codes.length });
  }

  /** The smallest distance anything not yet handed out can have (Infinity when exhausted). */
  peekDistance(): number {
    return this.keys.length > 0 ? this.keys[0]! : Infinity;
  }

  next(): boolean {
    while (this.keys.length > 0) {
      const key = this.keys[0]!;
      const item = this.pop();
      this.work++;
      if (item.level < 0) {
        this.position = item.lo;
        this.distance = key;
        return true;
      }
      this.open(item);
    }
    return false;
  }

  private open(cell: Cell): void {
    const members = this.members.count(cell.lo, cell.hi);
    if (members === 0) return;
    const { codes, docs, lat, lon } = this.index;
    if (members <= LEAF_SIZE || cell.level === CELL_BITS) {
      const it = this.members.open(cell.lo, cell.hi);
      for (let g = it.next(); g !== END; g = it.next()) {
        const d = docs[g]!;
        this.push(haversineMeters(this.lat, this.lon, lat[d]!, lon[d]!), { level: -1, prefix: 0, lo: g, hi: g });
      }
      return;
    }
    const level = cell.level + 1;
    const shift = 2 * (CELL_BITS - level);
    const cellSpan = 1 << (CELL_BITS - level);
    let lo = cell.lo;
    for (let k = 0; k < 4; k++) {
      const prefix = cell.prefix * 4 + k;
      const hi = k === 3 ? cell.hi : lowerBound(codes, lo, cell.hi, (prefix + 1) * 2 ** shift);
      if (hi > lo) {
        const lonMin = ((compactBits(prefix) * cellSpan) / 65536) * 360 - 180;
        const latMin = ((compactBits(prefix >>> 1) * cellSpan) / 65536) * 180 - 90;
        const size = cellSpan / 65536;
        this.push(boxLowerBound(this.lat, this.lon, latMin, latMin + size * 180, lonMin, lonMin + size * 360), { level, prefix, lo, hi });
      }
      lo = hi;
    }
  }

  private push(key: number, item: Cell): void {
    const keys = this.keys;
    const items = this.items;
    let i = keys.length;
    keys.push(key);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keys[parent]! <= key) break;
      keys[i] = keys[parent]!;
      items[i] = items[parent]!;
      i = parent;
    }
    keys[i] = key;
    items[i] = item;
  }

  private pop(): Cell {
    const keys = this.keys;
    const items = this.items;
    const top = items[0]!;
    const lastKey = keys.pop()!;
    const lastItem = items.pop()!;
    const n = keys.length;
    if (n > 0) {
      let i = 0;
      while (true) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && keys[child + 1]! < keys[child]!) child++;
        if (keys[child]! >= lastKey) break;
        keys[i] = keys[child]!;
        items[i] = items[child]!;
        i = child;
      }
      keys[i] = lastKey;
      items[i] = lastItem;
    }
    return top;
  }
}
