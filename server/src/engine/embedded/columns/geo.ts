// The geo column: documents with coordinates sorted by a Z-order (Morton) code of their quantised
// position (the geo order), so that every quadtree cell is a contiguous range of that order
// (search/nearest.ts walks the cells nearest first). Also great-circle distances.

export const EARTH_RADIUS_M = 6_371_008.8;
export const RAD = Math.PI / 180;
/** Bits per coordinate of a Z-order code: cells of a quadtree 16 levels deep. */
export const CELL_BITS = 16;

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

/** The inverse of spreadBits: the even bits of v, packed (a cell prefix back to a coordinate). */
export function compactBits(v: number): number {
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

/** A segment's geo column (sections.ts: latitude, longitude, geoCodes, geoDocs). */
export interface GeoIndex {
  /** Morton codes of the documents with coordinates, ascending. */
  codes: Uint32Array;
  /** The documents, aligned with codes. */
  docs: Uint32Array;
  lat: Float64Array;
  lon: Float64Array;
}
