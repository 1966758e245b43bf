// The dashboard's first screen (issue 19, Targets: interactive within 1 s on loopback, JavaScript
// at most 80 kB gzipped). Loads /dashboard in a fresh Chromium context N times against a running
// Sift and reads the app's own "dashboard-interactive" mark (first screen drawn and focused,
// from navigation start). Prints a Markdown table for bench/RESULTS.md ("Dashboard").
//
//   npm run bench:dashboard              20 loads
//   npm run bench:dashboard -- --loads=50
import os from "node:os";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { dashboardDist } from "../server/src/routes/dashboard.ts";
import { startSift } from "../test/support/server.ts";
import { launchChromium } from "../test/browser/support/browser.ts";
import { percentile } from "./measure.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const LOADS = Number(args.get("loads") ?? 20);

const assets = join(dashboardDist(), "assets");
const gzipped = readdirSync(assets)
  .filter((f) => f.endsWith(".js"))
  .reduce((sum, f) => sum + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);

const [sift, browser] = await Promise.all([startSift(), launchChromium()]);
try {
  // The server's file cache is warm after its first visit, as for every visitor but the first.
  await fetch(`${sift.url}/dashboard`);
  const marks: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${sift.url}/dashboard`);
    await page.getByLabel("E-mail").waitFor();
    const at = await page.evaluate(() => performance.getEntriesByName("dashboard-interactive")[0]?.startTime ?? NaN);
    if (!Number.isFinite(at)) throw new Error("the dashboard never marked itself interactive");
    marks.push(at);
    await context.close();
  }
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  const table = [
    `Run ${new Date().toISOString().slice(0, 16)}Z, ${os.cpus().length} cores ${os.cpus()[0]?.model ?? ""}, Node ${process.versions.node}, Debian Chromium headless, ${LOADS} loads in fresh contexts.`,
    "",
    "| figure | measured | target |",
    "| --- | --- | --- |",
    `| first screen interactive, p50 / p95 / max | ${ms(percentile(marks, 0.5))} / ${ms(percentile(marks, 0.95))} / ${ms(Math.max(...marks))} | ≤ 1,000 ms |`,
    `| JavaScript, gzipped (all chunks) | ${(gzipped / 1024).toFixed(1)} kB | ≤ 80 kB |`,
  ].join("\n");
  console.log(`\n${table}\n`);
} finally {
  await browser.close();
  await sift.stop();
}
