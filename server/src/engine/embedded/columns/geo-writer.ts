// Writes the geo column: coordinates per document and the geo order (documents with coordinates
// by Z-order code). Most records of many indexes have no coordinates, so they are collected
// sparsely, by slot, as records arrive.
import type { SegmentFileWriter } from "../segment/segment-file.ts";
import { SECTIONS } from "../segment/sections.ts";
import { Growable, radixSortByKey, release } from "../util/arrays.ts";
import { geoCode } from "./geo.ts";

const NONE = 0xffff_ffff;
/** Elements of NaN written at a time when no record has coordinates. */
const NAN_CHUNK = 512 * 1024;

export class GeoWriter {
  private readonly slots = new Growable(Uint32Array);
  private readonly lat = new Growable(Float64Array);
  private readonly lon = new Growable(Float64Array);

  add(slot: number, lat: number, lon: number): void {
    this.slots.push(slot);
    this.lat.push(lat);
    this.lon.push(lon);
  }

  /**
   * Writes latitude, longitude, geoCodes and geoDocs for the documents of docOfSlot (NONE for a
   * replaced duplicate); returns the geo order (geoDocs), which the posting writers need next.
   */
  async write(out: SegmentFileWriter, docOfSlot: Uint32Array, n: number): Promise<Uint32Array> {
    if (this.slots.length === 0) {
      // Most indexes have no coordinates: two columns of NaN, written a chunk at a time, not 16
      // bytes a record held in memory.
      const nothing = new Float64Array(Math.min(n, NAN_CHUNK)).fill(NaN);
      for (const key of [SECTIONS.latitude, SECTIONS.longitude]) {
        const put = out.reserve(key, n);
        for (let at = 0; at < n; at += nothing.length)
          await put(nothing.subarray(0, Math.min(nothing.length, n - at)), at);
      }
      await out.add(SECTIONS.geoCodes, new Uint32Array(0));
      await out.add(SECTIONS.geoDocs, new Uint32Array(0));
      return new Uint32Array(0);
    }
    const lat = new Float64Array(n).fill(NaN);
    const lon = new Float64Array(n).fill(NaN);
    const slots = this.slots.view();
    for (let i = 0; i < slots.length; i++) {
      const d = docOfSlot[slots[i]!]!;
      if (d === NONE) continue;
      lat[d] = this.lat.get(i);
      lon[d] = this.lon.get(i);
    }
    this.slots.release();
    this.lat.release();
    this.lon.release();
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
