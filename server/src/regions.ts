// The 11 regions Sift runs in (docs/api.md, Regions). Locations let a client pick a first region
// before it has measured latency; the SDK then routes by measured latency and fails over in
// distance order.
export const REGIONS = [
  { id: "fremont", name: "Fremont", latitude: 37.5485, longitude: -121.9886 },
  { id: "dallas", name: "Dallas", latitude: 32.7767, longitude: -96.797 },
  { id: "atlanta", name: "Atlanta", latitude: 33.749, longitude: -84.388 },
  { id: "newark", name: "Newark", latitude: 40.7357, longitude: -74.1724 },
  { id: "toronto", name: "Toronto", latitude: 43.6532, longitude: -79.3832 },
  { id: "london", name: "London", latitude: 51.5072, longitude: -0.1276 },
  { id: "frankfurt", name: "Frankfurt", latitude: 50.1109, longitude: 8.6821 },
  { id: "mumbai", name: "Mumbai", latitude: 19.076, longitude: 72.8777 },
  { id: "singapore", name: "Singapore", latitude: 1.3521, longitude: 103.8198 },
  { id: "tokyo", name: "Tokyo", latitude: 35.6762, longitude: 139.6503 },
  { id: "sydney", name: "Sydney", latitude: -33.8688, longitude: 151.2093 },
] as const;

export type RegionId = (typeof REGIONS)[number]["id"];
export const REGION_IDS: readonly string[] = REGIONS.map((r) => r.id);
export const isRegionId = (id: string): id is RegionId => REGION_IDS.includes(id);
