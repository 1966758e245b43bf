// <sift-autocomplete regions="…"> in Debian's Chromium: the widget's client routes between the
// regions it is given, so a region that answers 503 (behind on a write, or briefly unavailable)
// costs the user nothing; without the attribute the same region leaves the widget unavailable.
import { Hono } from "hono";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import type { AppEnv } from "../../server/src/http/env.ts";
import { mountDemo } from "../../server/src/routes/demo.ts";
import { startSift, type RunningSift } from "../support/server.ts";
import { launchChromium, serveAt } from "./support/browser.ts";
import { publicIndex, putRecords, type PublicIndex } from "./support/data.ts";
import { widgetPage } from "./support/pages.ts";

const BEHIND = "http://behind.sift.test";
const CITIES = ["Paris", "Parma", "Parla"].map((title, i) => ({ id: title.toLowerCase(), title, weight: 3 - i }));

let sift: RunningSift;
let browser: Browser;
let target: PublicIndex;
const assets = new Hono<AppEnv>();
const pages = new Map<string, string>();
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  [sift, browser] = await Promise.all([startSift(), launchChromium()]);
  target = await publicIndex(sift.url, "regioncities");
  await putRecords(target, CITIES);
  mountDemo(assets, { demo: { serviceName: target.service, indexName: target.index } });
  assets.get("/__test/:name", (c) => c.html(pages.get(c.req.param("name")) ?? "no such page"));
});
afterEach(async () => {
  await Promise.all(contexts.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await browser?.close();
  await sift?.stop();
});

/** A page whose widget has `attrs`, with a region at BEHIND that is alive but answers searches 503. */
async function open(attrs: Record<string, string>): Promise<{ page: Page; behindSearches: string[] }> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  await serveAt(page, sift.url, ["/widget/", "/__test/"], (url, init) => assets.request(url, init));
  const behindSearches: string[] = [];
  const cors = { "access-control-allow-origin": "*", "access-control-expose-headers": "retry-after" };
  await page.route(`${BEHIND}/**`, (route) => {
    const url = new URL(route.request().url());
    if (url.pathname === "/healthz") return route.fulfill({ headers: cors, json: { status: "ok" } });
    behindSearches.push(url.searchParams.get("query") ?? "");
    return route.fulfill({
      status: 503,
      headers: { ...cors, "content-type": "application/problem+json", "retry-after": "1" },
      body: JSON.stringify({ title: "Service Unavailable", status: 503, detail: "this region has not applied it yet" }),
    });
  });
  const name = `page${pages.size}`;
  // No key: the index is PUBLIC, and a keyless GET needs no CORS preflight to the fake region.
  pages.set(
    name,
    widgetPage({ attrs: { service: target.service, index: target.index, debounce: "30", weighted: true, ...attrs } }),
  );
  await page.goto(`${sift.url}/__test/${name}`);
  await page.waitForFunction(() => customElements.get("sift-autocomplete") !== undefined);
  return { page, behindSearches };
}

const titles = (page: Page) => page.locator("sift-autocomplete [role=listbox]:visible [part~=title]").allTextContents();
const message = (page: Page) => page.locator("sift-autocomplete [part~=message]").textContent();

test("with regions, a region that answers 503 hands the search to the next one and the user sees suggestions", async () => {
  const { page, behindSearches } = await open({
    "base-url": BEHIND,
    regions: `london=${BEHIND} frankfurt=${sift.url}`,
  });
  // The failing region is measured the closest (the regions are measured at the first focus), so
  // it is asked first. (A forced region, `region`, would be asked alone: D-384.)
  await page.route(`${sift.url}/healthz`, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    await route.continue();
  });
  await page.locator("sift-autocomplete input").pressSequentially("par");
  await expect.poll(() => titles(page)).toEqual(["Paris", "Parma", "Parla"]);
  expect(behindSearches.length).toBeGreaterThan(0);
  expect(
    await page.evaluate(() => (window as unknown as { events: { type: string }[] }).events.map((e) => e.type)),
  ).not.toContain("sift-error");
});

test("without regions, the same region leaves the widget unavailable", async () => {
  const { page, behindSearches } = await open({ "base-url": BEHIND });
  await page.locator("sift-autocomplete input").pressSequentially("par");
  await expect.poll(() => message(page)).toBe("Search is unavailable");
  expect(behindSearches).toContain("par");
});
