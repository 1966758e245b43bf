// Nearest-first enumeration, the geo reading order: a best-first walk over the quadtree cells of
// the geo order (columns/geo.ts; Hjaltason & Samet's incremental nearest neighbour) yields the
// members of a posting expression (in geo order) in exact distance order, opening only cells near
// the point that hold members.
import { CELL_BITS, EARTH_RADIUS_M, RAD, compactBits, haversineMeters, type GeoIndex } from "../columns/geo.ts";
import { END, type Source } from "../postings/sources.ts";
import { lowerBound } from "../util/arrays.ts";

/**
 * Cells with at most this many members are opened into their members. For an intersection the
 * count is an upper bound (its smallest input), so enumerating early stops a descent into cells
 * where the inputs never meet.
 */
const LEAF_SIZE = 32;

/** A lower bound of the distance from (lat, lon) to any point of the box, in meters. */
function boxLowerBound(
  lat: number,
  lon: number,
  latMin: number,
  latMax: number,
  lonMin: number,
  lonMax: number,
): number {
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
        this.push(boxLowerBound(this.lat, this.lon, latMin, latMin + size * 180, lonMin, lonMin + size * 360), {
          level,
          prefix,
          lo,
          hi,
        });
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
