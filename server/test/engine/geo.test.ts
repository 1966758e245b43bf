import { describe, expect, it } from "vitest";
import { random } from "../support/random.ts";
import { radixSortByKey } from "../../src/engine/embedded/util/arrays.ts";
import { geoCode, haversineMeters, type GeoIndex } from "../../src/engine/embedded/columns/geo.ts";
import { NearestIterator } from "../../src/engine/embedded/search/nearest.ts";
import { RunSource } from "../../src/engine/embedded/postings/sources.ts";

function index(points: [number, number][]): GeoIndex {
  const lat = Float64Array.from(points, (p) => p[0]);
  const lon = Float64Array.from(points, (p) => p[1]);
  const docs = radixSortByKey(
    Uint32Array.from(points, ([la, lo]) => geoCode(la, lo)),
    Uint32Array.from(points, (_, i) => i),
  );
  return { codes: Uint32Array.from(docs, (d) => geoCode(lat[d]!, lon[d]!)), docs, lat, lon };
}

describe("nearest-first enumeration", () => {
  // Points everywhere, dense near the poles and the antimeridian where lat/lon cells mislead.
  const rand = random(11);
  const points: [number, number][] = [];
  for (let i = 0; i < 3000; i++) points.push([-90 + rand() * 180, -180 + rand() * 360]);
  for (let i = 0; i < 500; i++) points.push([85 + rand() * 5, -180 + rand() * 360]);
  for (let i = 0; i < 500; i++)
    points.push([-60 + rand() * 120, rand() < 0.5 ? 179.5 + rand() * 0.5 : -180 + rand() * 0.5]);
  const geo = index(points);

  it.each([
    [0, 0],
    [89.9, 10],
    [-89.5, -100],
    [10, 179.99],
    [-20, -179.9],
    [48.85, 2.35],
  ])("yields every point in distance order from (%d, %d)", (lat, lon) => {
    const members = new RunSource(
      Uint32Array.from(points, (_, i) => i),
      0,
      points.length,
    );
    const it = new NearestIterator(geo, members, lat, lon);
    const seen: number[] = [];
    let previous = -1;
    while (it.next()) {
      expect(it.distance).toBeGreaterThanOrEqual(previous);
      const doc = geo.docs[it.position]!;
      expect(it.distance).toBeCloseTo(haversineMeters(lat, lon, points[doc]![0], points[doc]![1]), 6);
      previous = it.distance;
      seen.push(doc);
    }
    expect(seen).toHaveLength(points.length);
    expect(new Set(seen).size).toBe(points.length);
  });

  it("yields only members of the source", () => {
    const odd = Uint32Array.from({ length: points.length }, (_, g) => g).filter((g) => geo.docs[g]! % 2 === 1);
    const it = new NearestIterator(geo, new RunSource(odd, 0, odd.length), 0, 0);
    let count = 0;
    while (it.next()) {
      expect(geo.docs[it.position]! % 2).toBe(1);
      count++;
    }
    expect(count).toBe(odd.length);
  });
});
