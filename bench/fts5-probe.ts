// The measurement behind docs/engine.md (E1): how SQLite FTS5 (node:sqlite) handles the
// orders that the ranking (docs/ranking.md) needs besides weight, on the 1M synthetic set.
// Run: node fts5-probe.ts [records]   (from bench/, Node 24)
import { DatabaseSync } from "node:sqlite";
import fs from "node:fs";
import path from "node:path";
import { syntheticRecords, prng } from "./datasets.ts";

const count = Number(process.argv[2] ?? 1_000_000);
const dir = path.join(import.meta.dirname, "data", "fts5-probe");
fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
const db = new DatabaseSync(path.join(dir, "probe.db"));
db.exec(`PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
  CREATE TABLE rec(rowid INTEGER PRIMARY KEY, id TEXT, lat REAL, lon REAL);
  CREATE VIRTUAL TABLE fts USING fts5(title, content='', prefix='1 2 3', tokenize='unicode61 remove_diacritics 2');
  CREATE VIRTUAL TABLE geo USING rtree(id, minLat, maxLat, minLon, maxLon);`);

const t0 = performance.now();
const rows: { id: string; title: string; weight: number; lat: number; lon: number }[] = [];
for (const batch of syntheticRecords(count)) {
  for (const r of batch) {
    rows.push({
      id: r.id,
      title: r.title,
      weight: r.weight ?? 0,
      lat: r.latitude ? Number(r.latitude) : NaN,
      lon: r.longitude ? Number(r.longitude) : NaN,
    });
  }
}
// rowid = rank by weight descending, so `ORDER BY rowid LIMIT k` is the weighted top-k.
rows.sort((a, b) => b.weight - a.weight || (a.id < b.id ? -1 : 1));
const insRec = db.prepare("INSERT INTO rec VALUES (?, ?, ?, ?)");
const insFts = db.prepare("INSERT INTO fts(rowid, title) VALUES (?, ?)");
const insGeo = db.prepare("INSERT INTO geo VALUES (?, ?, ?, ?, ?)");
db.exec("BEGIN");
rows.forEach((r, i) => {
  insRec.run(i + 1, r.id, Number.isNaN(r.lat) ? null : r.lat, Number.isNaN(r.lon) ? null : r.lon);
  insFts.run(i + 1, r.title);
  if (!Number.isNaN(r.lat)) insGeo.run(i + 1, r.lat, r.lat, r.lon, r.lon);
});
db.exec("COMMIT");
db.exec("CREATE INDEX rec_id ON rec(id)");
console.log(`built ${count} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const random = prng(7);
const letters = Array.from({ length: 40 }, () => rows[Math.floor(random() * rows.length)]!.title[0]!.toLowerCase());
const points = Array.from({ length: 40 }, () => {
  const r = rows[Math.floor(random() * rows.length)]!;
  return Number.isNaN(r.lat) ? { lat: 48.85, lon: 2.35 } : { lat: r.lat, lon: r.lon };
});

function measure(label: string, run: (i: number) => unknown): void {
  const times: number[] = [];
  for (let i = 0; i < letters.length; i++) {
    const s = performance.now();
    run(i);
    times.push(performance.now() - s);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2);
  console.log(`${label.padEnd(44)} p50 ${q(0.5)} ms  p99 ${q(0.99)} ms`);
}

const weighted = db.prepare("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid LIMIT 10");
const byId = db.prepare(
  "SELECT r.id FROM fts JOIN rec r ON r.rowid = fts.rowid WHERE fts MATCH ? ORDER BY r.id LIMIT 10",
);
const byDistance = db.prepare(`SELECT r.rowid FROM fts JOIN rec r ON r.rowid = fts.rowid WHERE fts MATCH ?
  ORDER BY r.lat IS NULL, (r.lat - ?) * (r.lat - ?) + (r.lon - ?) * (r.lon - ?), r.id LIMIT 10`);
const inBox = db.prepare(`SELECT fts.rowid FROM fts WHERE fts MATCH ? AND fts.rowid IN
  (SELECT id FROM geo WHERE minLat >= ? AND maxLat <= ? AND minLon >= ? AND maxLon <= ?) LIMIT 200`);

measure("weighted 1-letter prefix (rowid order)", (i) => weighted.all(`${letters[i]}*`));
measure("unweighted 1-letter prefix (ORDER BY id)", (i) => byId.all(`${letters[i]}*`));
measure("geo 1-letter prefix (ORDER BY distance)", (i) => {
  const p = points[i]!;
  return byDistance.all(`${letters[i]}*`, p.lat, p.lat, p.lon, p.lon);
});
measure("geo 1-letter prefix, R*Tree box 1 deg", (i) => {
  const p = points[i]!;
  return inBox.all(`${letters[i]}*`, p.lat - 0.5, p.lat + 0.5, p.lon - 0.5, p.lon + 0.5);
});
db.close();
fs.rmSync(dir, { recursive: true, force: true });
