// The dashboard in Debian's Chromium against a real Sift: a new tenant's whole journey done with
// the keyboard alone, axe-core on every screen, and the budgets of issue 19 (size, first screen).
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Browser, BrowserContext, FileChooser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { dashboardDist } from "../../server/src/routes/dashboard.ts";
import { Http } from "../support/http.ts";
import { startSift, type RunningSift } from "../support/server.ts";
import { launchChromium } from "./support/browser.ts";
import { activate, expectAccessible, follow, tabTo } from "./support/dashboard.ts";

let sift: RunningSift;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  [sift, browser] = await Promise.all([startSift(), launchChromium()]);
});
afterEach(async () => {
  await Promise.all(contexts.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await browser?.close();
  await sift?.stop();
});

/** A fresh browser (no cookies) on the dashboard; console errors (a CSP refusal among them) are kept. */
async function open(path = "/dashboard"): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: sift.url });
  contexts.push(context);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (m) => {
    // A failed call the dashboard shows on screen is logged by Chromium too; those are expected.
    if (m.type() === "error" && !/status of (4\d\d)/.test(m.text())) errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${sift.url}${path}`);
  return { page, errors };
}

const heading = (page: Page) => page.locator("main h1");
const section = (page: Page, name: string) =>
  page.getByRole("navigation", { name: "Index sections" }).getByRole("link", { name, exact: true });

const CSV = [
  "id,title,weight,color",
  "hose-1,Garden hose,40,green",
  "rake-1,Garden rake,25,red",
  "shears-1,Pruning shears,30,black",
  ...Array.from({ length: 47 }, (_, i) => `item-${i},Watering can ${i},${i + 1},blue`),
].join("\n");

test("a new tenant signs up, makes a service, an index and a key, uploads, edits, rolls back and revokes: keyboard only, no axe violations", async () => {
  const { page, errors } = await open();
  // Listening from the start: Playwright intercepts file choosers only once a listener is set,
  // and a key press is quicker than that takes.
  const choosers: FileChooser[] = [];
  page.on("filechooser", (chooser) => choosers.push(chooser));
  const email = `journey-${process.pid}@dash.example`;

  // Signed out: the sign-in screen, and the way to an account.
  await expect.poll(() => heading(page).textContent()).toBe("Sign in to Sift");
  await expectAccessible(page, "sign in");
  await follow(page, page.getByRole("link", { name: "Create an account" }));
  await expect.poll(() => heading(page).textContent()).toBe("Create your Sift account");
  await expectAccessible(page, "sign up");

  // A password the server refuses is explained next to the password field.
  await tabTo(page, page.getByLabel("E-mail"));
  await page.keyboard.type(email);
  await tabTo(page, page.getByLabel("Password"));
  await page.keyboard.type("short");
  await page.keyboard.press("Enter");
  // The browser's own check (minlength) speaks first; the server's answer is the next line of defence.
  await page.keyboard.press("End");
  await page.keyboard.type(" and longer now");
  const password = "short and longer now";
  await page.keyboard.press("Enter");

  // Signed in: an empty catalog says what to do first.
  await expect.poll(() => heading(page).textContent()).toBe("Services and indexes");
  await expect.poll(() => page.getByText("No services yet").isVisible()).toBe(true);
  expect(await page.getByText(email).isVisible()).toBe(true);
  await expectAccessible(page, "empty catalog");

  // A name the server refuses: its message sits under the name field.
  await tabTo(page, page.getByLabel("Service name"));
  await page.keyboard.type("Not A Valid Name!");
  await page.keyboard.press("Enter");
  const nameError = page.locator("#service-name-error");
  await expect.poll(() => nameError.isVisible()).toBe(true);
  expect(await page.getByLabel("Service name").getAttribute("aria-describedby")).toContain("service-name-error");
  await expectAccessible(page, "service form with an error");

  const service = `shop-${process.pid}`;
  await page.getByLabel("Service name").fill("");
  await page.keyboard.type(service);
  await page.keyboard.press("Enter");
  await expect.poll(() => page.getByRole("rowheader", { name: service }).isVisible()).toBe(true);

  await tabTo(page, page.getByLabel("Index name"));
  await page.keyboard.type("products");
  await page.keyboard.press("Enter");
  await expect.poll(() => page.getByRole("link", { name: "products" }).isVisible()).toBe(true);
  // PUBLIC, so that a web page's search key can search it.
  const visibility = page.getByLabel("Visibility of products");
  expect(await visibility.inputValue()).toBe("PRIVATE");
  await tabTo(page, visibility);
  await page.keyboard.press("ArrowDown");
  await expect.poll(() => page.locator("#announcer").textContent()).toBe("products is now PUBLIC");
  await expectAccessible(page, "catalog");

  // A search key, shown once with a copy button and the warning.
  await follow(page, page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "API keys" }));
  await expect.poll(() => heading(page).textContent()).toBe("API keys");
  await expect.poll(() => page.getByText("No keys yet").isVisible()).toBe(true);
  await tabTo(page, page.getByLabel("Name", { exact: true }));
  await page.keyboard.type("shop search");
  await page.keyboard.press("Enter");
  const secret = page.getByLabel("The new key");
  await expect.poll(() => secret.inputValue()).toMatch(/^pk-sift-srh-[A-Za-z0-9]{40}$/);
  const key = await secret.inputValue();
  expect(await page.getByText("Sift will not show it again").isVisible()).toBe(true);
  await activate(page, page.getByRole("button", { name: "Copy key" }));
  await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(key);
  await expect.poll(() => page.getByRole("rowheader", { name: "shop search" }).isVisible()).toBe(true);
  expect(await page.getByRole("row", { name: /shop search/ }).textContent()).toContain(key.slice(0, 16));
  await expectAccessible(page, "keys with a new secret");

  // The index: empty, then a CSV uploaded by picking the file with the keyboard.
  await follow(page, page.getByRole("link", { name: "Services and indexes" }).first());
  await follow(page, page.getByRole("link", { name: "products" }));
  await expect.poll(() => heading(page).textContent()).toBe("Index “products”");
  await expect.poll(() => page.getByText("This version holds no records").isVisible()).toBe(true);
  await expectAccessible(page, "empty index");
  await follow(page, section(page, "Upload"));
  await expect.poll(() => page.getByRole("heading", { name: "Upload a file" }).isVisible()).toBe(true);
  await expectAccessible(page, "upload");
  await tabTo(page, page.locator("#upload-file"));
  await page.keyboard.press("Space");
  await expect.poll(() => choosers.length).toBe(1);
  await choosers[0]!.setFiles({ name: "products.csv", mimeType: "text/csv", buffer: Buffer.from(CSV) });
  const ingest = page.getByTestId("ingest");
  await expect.poll(() => ingest.textContent(), { timeout: 30_000 }).toContain("Ingested products.csv");
  expect(await ingest.textContent()).toContain("50 records ingested, 0 invalid");
  await expect.poll(() => page.getByTestId("record-count").textContent()).toBe("50");
  await expectAccessible(page, "upload finished");
  const bulkVersion = await page.getByTestId("active-version").textContent();

  // Find a record with the widget, edit its JSON, save.
  await follow(page, section(page, "Records"));
  await tabTo(page, page.locator("#record-search"));
  await page.keyboard.type("garden h");
  await expect
    .poll(() => page.locator("sift-autocomplete [role=option]").first().textContent())
    .toContain("Garden hose");
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  const json = page.getByLabel("The record as JSON");
  await expect.poll(() => json.inputValue()).toContain('"title": "Garden hose"');
  await expectAccessible(page, "record");

  // A value the server refuses: the field it names is shown with the editor.
  await tabTo(page, json);
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type('{ "title": "Garden hose", "weight": -5 }');
  await activate(page, page.getByRole("button", { name: "Save record" }));
  await expect.poll(() => page.locator("#record-json-error").textContent()).toContain("weight");
  expect(await json.getAttribute("aria-invalid")).toBe("true");
  await expectAccessible(page, "record with an error");

  await tabTo(page, json);
  await page.keyboard.press("ControlOrMeta+A");
  await page.keyboard.type('{ "title": "Garden hose, 25 m", "weight": 41, "data": { "color": "green" } }');
  await activate(page, page.getByRole("button", { name: "Save record" }));
  await expect.poll(() => page.getByTestId("active-version").textContent()).not.toBe(bulkVersion);
  await expect.poll(() => json.inputValue()).toContain('"title": "Garden hose, 25 m"');
  const editVersion = await page.getByTestId("active-version").textContent();

  // The timeline says what each version changed: the edit names its record, the upload counts
  // what it added, and lists the ids a page at a time.
  await follow(page, section(page, "Versions"));
  const edit = page.getByTestId(`changes-${editVersion}`);
  await expect.poll(() => edit.textContent()).toBe("Updated record hose-1");
  expect(await page.getByText("bulk upload · 50 records").isVisible()).toBe(true);
  expect(await page.getByText("index created, empty").isVisible()).toBe(true);
  const upload = page.getByTestId(`changes-${bulkVersion}`);
  await expect
    .poll(() => upload.textContent())
    .toContain("Against version 0: 50 added, 0 updated, 0 deleted, 0 unchanged");
  await expectAccessible(page, "versions");
  const listed = upload.locator(".changed-records li");
  await activate(page, upload.getByText("50 changed records of version"));
  await expect.poll(() => listed.count()).toBe(20);
  expect(await listed.first().textContent()).toBe("added hose-1");
  await activate(page, upload.getByRole("button", { name: "Show more changed records" }));
  await expect.poll(() => listed.count()).toBe(40);
  await activate(page, upload.getByRole("button", { name: "Show more changed records" }));
  await expect.poll(() => listed.count()).toBe(50);
  expect(await upload.getByRole("button", { name: "Show more changed records" }).count()).toBe(0);
  await expectAccessible(page, "versions with an upload's changes open");

  // The edited record's id opens it in the record browser.
  await follow(page, edit.getByRole("link", { name: "hose-1" }));
  await expect.poll(() => page.url()).toContain("/dashboard/indexes/products/records/hose-1");
  await expect.poll(() => json.inputValue()).toContain('"title": "Garden hose, 25 m"');
  await expectAccessible(page, "record opened from the timeline");

  // Roll back to the upload: the record is as it was.
  await follow(page, section(page, "Versions"));
  await activate(page, page.getByRole("button", { name: `Roll back to version ${bulkVersion}` }));
  await expect.poll(() => page.getByTestId("active-version").textContent()).toBe(bulkVersion);
  // The edit is not lost: it can be activated again.
  await expect.poll(() => page.getByRole("button", { name: `Activate version ${editVersion}` }).isVisible()).toBe(true);
  expect((await (await asUser(email, password)).get("/v1/indexes/products/records/hose-1")).body.title).toBe(
    "Garden hose",
  );

  // The "use it" panel names this service, index and server.
  await follow(page, section(page, "Use it"));
  const snippet = await page.locator(".code pre").first().textContent();
  expect(snippet).toContain(`service="${service}" index="products"`);
  expect(snippet).toContain(`${sift.url}/widget/sift-autocomplete.iife.js`);
  await expectAccessible(page, "use it");

  // The snippet, with the key put in, works on the tenant's own site: a page of another origin,
  // served by a real server (Chromium keeps pages that did not come from loopback off loopback).
  const shopPage = `<!doctype html><html lang="en"><head><title>Shop</title></head><body><main>${snippet!.replace(
    "pk-sift-srh-YOUR-KEY",
    key,
  )}</main></body></html>`;
  const site = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(shopPage),
  );
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", () => r()));
  const shop = await page.context().newPage();
  await shop.goto(`http://127.0.0.1:${(site.address() as { port: number }).port}/`);
  await shop.getByRole("combobox", { name: "Search" }).click();
  await shop.keyboard.type("gar");
  await expect
    .poll(() => shop.locator("sift-autocomplete [role=option]").allTextContents())
    .toEqual(expect.arrayContaining([expect.stringContaining("Garden hose")]));
  await shop.close();
  site.close();

  // Revoke the key, after confirming in a dialog; a page using it is refused from then on.
  const search = () =>
    fetch(`${sift.url}/v1/search?serviceName=${service}&indexName=products&query=gar`, {
      headers: { authorization: `Bearer ${key}` },
    }).then((r) => r.status);
  expect(await search()).toBe(200);
  await follow(page, page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "API keys" }));
  await activate(page, page.getByRole("button", { name: "Revoke shop search" }));
  const dialog = page.getByRole("dialog", { name: "Revoke the key “shop search”?" });
  await expect.poll(() => dialog.isVisible()).toBe(true);
  await expectAccessible(page, "revoke dialog");
  await activate(page, dialog.getByRole("button", { name: "Revoke key" }));
  await expect.poll(() => page.getByRole("row", { name: /shop search/ }).textContent()).toContain("revoked");
  expect(await search()).toBe(401);

  // Nothing secret is kept in the page: the session cookie is HttpOnly, storage is empty.
  expect(
    await page.evaluate(() => ({
      cookie: document.cookie,
      local: localStorage.length,
      session: sessionStorage.length,
    })),
  ).toEqual({ cookie: "", local: 0, session: 0 });

  await activate(page, page.getByRole("button", { name: "Sign out" }));
  await expect.poll(() => heading(page).textContent()).toBe("Sign in to Sift");
  expect(errors).toEqual([]);
}, 180_000);

/** The same user over the API, to check what the dashboard did as another client sees it. */
async function asUser(email: string, password: string): Promise<Http> {
  const http = new Http(sift.url);
  expect((await http.post("/v1/auth/login", { email, password })).status).toBe(200);
  return http;
}

describe("budgets", () => {
  test("the dashboard's JavaScript is at most 80 kB gzipped, the widget's chunk included", () => {
    const assets = join(dashboardDist(), "assets");
    const js = readdirSync(assets).filter((f) => f.endsWith(".js"));
    expect(js.length).toBeGreaterThan(0);
    const gzipped = js.reduce((sum, f) => sum + gzipSync(readFileSync(join(assets, f)), { level: 9 }).length, 0);
    expect(gzipped).toBeLessThanOrEqual(80 * 1024);
  });

  // How long it takes is measured by `npm run bench:dashboard` (bench/RESULTS.md, Dashboard).
  test("the first screen marks when it is interactive, and takes input then", async () => {
    // Warm the server's file cache once, as any visit after the first start finds it.
    await fetch(`${sift.url}/dashboard`);
    const context = await browser.newContext();
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(`${sift.url}/dashboard`);
    await page.getByLabel("E-mail").fill("typed@once.example");
    // The app marks the moment its first screen is drawn and focused, from navigation start.
    const interactive = await page.evaluate(() => performance.getEntriesByName("dashboard-interactive")[0]?.startTime);
    expect(interactive).toBeGreaterThan(0);
    expect(await page.getByLabel("E-mail").inputValue()).toBe("typed@once.example");
  });
});

describe("serving", () => {
  test("a screen's URL survives a reload, assets are cached for good, the page forbids inline scripts and framing", async () => {
    const page = await fetch(`${sift.url}/dashboard/indexes/anything/versions`);
    expect(page.status).toBe(200);
    expect(page.headers.get("cache-control")).toBe("no-cache");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self';");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await page.text();
    const asset = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const js = await fetch(`${sift.url}${asset}`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(js.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${sift.url}/dashboard/assets/nope.js`)).status).toBe(404);
    expect((await fetch(`${sift.url}/dashboard/assets/..%2Fpackage.json`)).status).toBe(404);
  });

  test("a signed-in user who reloads a deep link lands on that screen", async () => {
    const http = new Http(sift.url);
    expect(
      (await http.post("/v1/auth/signup", { email: "deep@dash.example", password: "correct horse battery" })).status,
    ).toBe(201);
    expect((await http.post("/v1/services", { name: `deep-${process.pid}` })).status).toBe(201);
    expect((await http.post("/v1/indexes", { name: "deep", serviceName: `deep-${process.pid}` })).status).toBe(201);
    const { page } = await open();
    await page.context().addCookies([{ name: "sift_session", value: http.sessionCookie!, url: sift.url }]);
    await page.goto(`${sift.url}/dashboard/indexes/deep/versions`);
    await expect.poll(() => heading(page).textContent()).toBe("Index “deep”");
    await expect.poll(() => page.getByText("Version 0").isVisible()).toBe(true);
    expect(await page.getByRole("link", { name: "Versions", exact: true }).getAttribute("aria-current")).toBe("page");
  });
});

describe("upload errors", () => {
  test("a file with bad lines fails with each bad line numbered; skipping them ingests the rest", async () => {
    const { page } = await open("/dashboard/signup");
    await page.getByLabel("E-mail").fill("lines@dash.example");
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByLabel("Service name").fill(`lines-${process.pid}`);
    await page.getByRole("button", { name: "Create service" }).click();
    await page.getByLabel("Index name").fill("lines");
    await page.getByRole("button", { name: "Create index" }).click();
    await page.getByRole("link", { name: "lines" }).click();
    await section(page, "Upload").click();
    const bad = ["id,title,weight", "a,Apple,1", "b,,2", "c,Cherry,-3", "d,Date,4"].join("\n");
    await page
      .locator("#upload-file")
      .setInputFiles({ name: "bad.csv", mimeType: "text/csv", buffer: Buffer.from(bad) });
    const ingest = page.getByTestId("ingest");
    await expect.poll(() => ingest.textContent(), { timeout: 30_000 }).toContain("bad.csv was not ingested");
    const lines = await page.locator(".line-errors li").allTextContents();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^Line 3, title: /);
    expect(lines[1]).toMatch(/^Line 4, weight: /);
    await expectAccessible(page, "failed upload");
    expect(await page.getByTestId("record-count").textContent()).toBe("0");

    // The same file dropped on the drop zone, with invalid lines skipped this time.
    await page.getByLabel(/Skip invalid lines/).check();
    const dropped = await page.evaluateHandle((text) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([text], "bad.csv", { type: "text/csv" }));
      return transfer;
    }, bad);
    await page.locator(".dropzone").dispatchEvent("dragover", { dataTransfer: dropped });
    expect(await page.locator(".dropzone").getAttribute("class")).toContain("dragging");
    await page.locator(".dropzone").dispatchEvent("drop", { dataTransfer: dropped });
    await expect.poll(() => ingest.textContent(), { timeout: 30_000 }).toContain("Ingested bad.csv");
    expect(await ingest.textContent()).toContain("2 records ingested, 2 invalid");
    await expect.poll(() => page.getByTestId("record-count").textContent()).toBe("2");
  });
});

/** A signed-up tenant with a service and an index, and a browser holding its session. */
async function signedIn(label: string): Promise<{ page: Page; http: Http; service: string }> {
  const http = new Http(sift.url);
  const email = `${label}-${process.pid}@dash.example`;
  expect((await http.post("/v1/auth/signup", { email, password: "correct horse battery" })).status).toBe(201);
  const service = `${label}-${process.pid}`;
  expect((await http.post("/v1/services", { name: service })).status).toBe(201);
  expect((await http.post("/v1/indexes", { name: `${label}-idx`, serviceName: service })).status).toBe(201);
  const { page } = await open();
  await page.context().addCookies([{ name: "sift_session", value: http.sessionCookie!, url: sift.url }]);
  await page.reload();
  await expect.poll(() => heading(page).textContent()).toBe("Services and indexes");
  // The lists load after the heading: a test that ends the session before they asked would see
  // the dashboard leave for sign-in on its own, mid-step.
  await page.getByRole("rowheader", { name: service }).waitFor();
  return { page, http, service };
}

describe("catalog and records", () => {
  test("deleting asks first; a service that holds an index is refused with the reason in the dialog", async () => {
    const { page, service } = await signedIn("del");
    await activate(page, page.getByRole("button", { name: `Delete service ${service}` }));
    const dialog = page.getByRole("dialog", { name: `Delete the service “${service}”?` });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await activate(page, dialog.getByRole("button", { name: "Delete service" }));
    await expect.poll(() => dialog.getByRole("alert").textContent()).toMatch(/index/i);
    // Escape closes the dialog and nothing was deleted.
    await page.keyboard.press("Escape");
    await expect.poll(() => dialog.isVisible()).toBe(false);
    expect(await page.getByRole("rowheader", { name: service }).isVisible()).toBe(true);

    await activate(page, page.getByRole("button", { name: "Delete index del-idx" }));
    await activate(page, page.getByRole("dialog").getByRole("button", { name: "Delete index" }));
    await expect.poll(() => page.getByText("No indexes yet").isVisible()).toBe(true);
    await activate(page, page.getByRole("button", { name: `Delete service ${service}` }));
    await activate(
      page,
      page.getByRole("dialog", { name: /Delete the service/ }).getByRole("button", { name: "Delete service" }),
    );
    await expect.poll(() => page.getByText("No services yet").isVisible()).toBe(true);
    await expectAccessible(page, "catalog emptied");
  });

  test("a record is added from the record browser, found, and deleted after confirmation", async () => {
    const { page, http } = await signedIn("rec");
    await follow(page, page.getByRole("link", { name: "rec-idx" }));
    await activate(page, page.getByRole("button", { name: "Add a record" }));
    await tabTo(page, page.getByLabel("Record id"));
    await page.keyboard.type("kettle-1");
    await tabTo(page, page.getByLabel("The new record as JSON"));
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type('{ "title": "Copper kettle", "weight": 3 }');
    await activate(page, page.getByRole("button", { name: "Add record" }));
    await expect.poll(() => page.getByTestId("record-count").textContent()).toBe("1");
    await expect.poll(() => page.getByLabel("The record as JSON").inputValue()).toContain("Copper kettle");
    expect((await http.get("/v1/indexes/rec-idx/records/kettle-1")).body.title).toBe("Copper kettle");

    await activate(page, page.getByRole("button", { name: "Delete record" }));
    await activate(page, page.getByRole("dialog").getByRole("button", { name: "Delete record" }));
    await expect.poll(() => page.getByTestId("record-count").textContent()).toBe("0");
    expect((await http.get("/v1/indexes/rec-idx/records/kettle-1")).status).toBe(404);
  });

  test("a record is opened by its id; an id the index lacks says so", async () => {
    const { page, http } = await signedIn("byid");
    expect((await http.put("/v1/indexes/byid-idx/records/lamp-7", { title: "Brass desk lamp" })).status).toBe(200);
    await follow(page, page.getByRole("link", { name: "byid-idx" }));
    await tabTo(page, page.getByLabel("Or open a record by its id"));
    await page.keyboard.type("lamp-7");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByLabel("The record as JSON").inputValue()).toContain("Brass desk lamp");
    expect(await page.getByRole("heading", { name: "Record lamp-7" }).isVisible()).toBe(true);

    await page.getByLabel("Or open a record by its id").fill("lamp-8");
    await page.keyboard.press("Enter");
    const alert = page.locator("#records-title ~ .error[role=alert]");
    await expect.poll(() => alert.textContent()).toMatch(/"lamp-8" does not exist/);
    expect(await page.getByLabel("The record as JSON").count()).toBe(0);
    await expectAccessible(page, "a record id not found");

    // Made meanwhile, the same id asked again is read again.
    expect((await http.put("/v1/indexes/byid-idx/records/lamp-8", { title: "Tin lamp" })).status).toBe(200);
    await page.getByLabel("Or open a record by its id").press("Enter");
    await expect.poll(() => page.getByLabel("The record as JSON").inputValue()).toContain("Tin lamp");
  });

  test("coalescing folds the changes into a checkpoint, which becomes active", async () => {
    const { page, http } = await signedIn("coal");
    for (const id of ["a", "b", "c"])
      expect((await http.put(`/v1/indexes/coal-idx/records/${id}`, { title: `Thing ${id}` })).status).toBe(200);
    await page.goto(`${sift.url}/dashboard/indexes/coal-idx/versions`);
    await expect.poll(() => page.getByText(/^Added record [abc]$/).count()).toBe(3);
    const before = await page.getByTestId("active-version").textContent();
    await activate(page, page.getByRole("button", { name: "Coalesce changes into a checkpoint" }));
    await expect.poll(() => page.getByTestId("active-version").textContent()).not.toBe(before);
    const checkpoint = page.locator(".timeline li.active");
    await expect.poll(() => checkpoint.textContent()).toContain(`checkpoint of version ${before}`);
    expect(await checkpoint.textContent()).toContain("3 records");
    await expect.poll(() => checkpoint.textContent()).toContain("No record changed");
    await expectAccessible(page, "versions after coalesce");
  });
});

test("an index its service keeps in other regions links to their dashboards instead of failing its tabs", async () => {
  const { page, http } = await signedIn("held");
  // This one process holds everything; what a region outside the service's regions says of the
  // index (heldIn, the cluster tests check that each region says it) is put into its description.
  const heldIn = [
    { id: "frankfurt", url: "http://frankfurt.sift.test" },
    { id: "london", url: "http://london.sift.test/" },
  ];
  const asked: string[] = [];
  await page.route(`${sift.url}/v1/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    asked.push(path);
    if (path !== "/v1/indexes" && path !== "/v1/indexes/held-idx") return route.fallback();
    const body = (await (await route.fetch()).json()) as { indexes?: { name: string }[] };
    const described = (i: { name: string }) => (i.name === "held-idx" ? { ...i, heldIn } : i);
    return route.fulfill({ json: body.indexes ? { indexes: body.indexes.map(described) } : described(body as never) });
  });
  await page.reload();
  const row = page.getByRole("rowheader", { name: /held-idx/ });
  await expect.poll(() => row.textContent()).toBe("held-idx kept in frankfurt, london");

  await page.goto(`${sift.url}/dashboard/indexes/held-idx/versions`);
  const kept = page.getByRole("region", { name: "Kept in other regions" });
  await expect.poll(() => kept.isVisible()).toBe(true);
  expect(await kept.textContent()).toContain(
    `The service “${(await http.get("/v1/indexes/held-idx")).body.serviceName}”`,
  );
  expect(await page.getByRole("link", { name: "Open it in frankfurt" }).getAttribute("href")).toBe(
    "http://frankfurt.sift.test/dashboard/indexes/held-idx/versions",
  );
  expect(await page.getByRole("link", { name: "Open it in london" }).getAttribute("href")).toBe(
    "http://london.sift.test/dashboard/indexes/held-idx/versions",
  );
  // No tab is offered, and nothing this region would refuse (421) is asked.
  expect(await page.getByRole("navigation", { name: "Index sections" }).count()).toBe(0);
  expect(asked.filter((p) => p.startsWith("/v1/indexes/held-idx/") || p === "/v1/search")).toEqual([]);
  await expectAccessible(page, "index kept in other regions");
});

test("an index a region has set aside says so in the list of indexes", async () => {
  const { page } = await signedIn("aside");
  // This one process replicates nothing; what a region that set the index aside says of it in
  // GET /v1/regions (setAside, test/replication/set-aside.test.ts checks that it does) is put in.
  await page.route(`${sift.url}/v1/regions`, async (route) => {
    const body = (await (await route.fetch()).json()) as { regions: { id: string; indexes?: unknown[] }[] };
    const lag = { activeVersion: "0", behindVersions: 2, lagMs: 130_000 };
    const indexes = (setAside: boolean) => [
      { indexName: "aside-idx", ...lag, ...(setAside ? { setAside: true } : {}) },
    ];
    const regions = body.regions.map((r) =>
      r.id === "london" || r.id === "tokyo" ? { ...r, indexes: indexes(r.id === "london") } : r,
    );
    return route.fulfill({ json: { regions } });
  });
  await page.reload();
  const row = page.getByRole("rowheader", { name: /aside-idx/ });
  // Tokyo is only behind: that passes with time, and is not named.
  await expect.poll(() => row.textContent()).toBe("aside-idx not served in london at the moment");
  await expectAccessible(page, "index set aside in a region");
});

test("a session that ends while the dashboard is open leads back to sign-in, saying so", async () => {
  const { page } = await signedIn("ended");
  // Signed out elsewhere (another tab): the cookie is cleared and the session deleted.
  expect(await page.evaluate(() => fetch("/v1/auth/logout", { method: "POST" }).then((r) => r.status))).toBe(204);
  await follow(page, page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "API keys" }));
  await expect.poll(() => heading(page).textContent()).toBe("Sign in to Sift");
  expect(await page.getByRole("alert").textContent()).toBe("Your session ended: sign in again.");
  expect(new URL(page.url()).pathname).toBe("/dashboard/signin");

  // A wrong password there is the form's error, not another "session ended".
  await page.getByLabel("E-mail").fill(`ended-${process.pid}@dash.example`);
  await page.getByLabel("Password").fill("not the password at all");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => page.locator("form .error").textContent()).toMatch(/e-mail or the password/i);
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => heading(page).textContent()).toBe("Services and indexes");
  expect(await page.getByRole("alert").count()).toBe(0);
});

test("a search key restricted to a site: a bad origin is explained under its field, a good one is listed", async () => {
  const { page } = await signedIn("origins");
  await follow(page, page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "API keys" }));
  await page.getByLabel("Name", { exact: true }).fill("shop widget");
  await page.getByLabel("Allowed origins (optional)").fill("https://shop.example, shop.example/path");
  await page.getByRole("button", { name: "Create key" }).click();
  const error = page.locator("#key-referrers-error");
  await expect.poll(() => error.isVisible()).toBe(true);
  expect(await page.getByLabel("Allowed origins (optional)").getAttribute("aria-invalid")).toBe("true");
  await expectAccessible(page, "key form with an origin refused");

  await page.getByLabel("Allowed origins (optional)").fill("https://shop.example https://*.shop.example");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect.poll(() => page.getByLabel("The new key").inputValue()).toMatch(/^pk-sift-srh-/);
  await expect
    .poll(() => page.getByRole("rowheader", { name: /shop widget/ }).textContent())
    .toContain("sites: https://shop.example, https://*.shop.example");
});

describe("keys", () => {
  test("a key made to expire says when; one past its expiry says it expired and offers no revoke", async () => {
    const { page, http } = await signedIn("exp");
    await follow(page, page.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "API keys" }));
    await expect.poll(() => heading(page).textContent()).toBe("API keys");
    await page.getByLabel("Name", { exact: true }).fill("month key");
    await page.getByLabel("Expires").selectOption({ label: "In 30 days" });
    const before = Date.now();
    await activate(page, page.getByRole("button", { name: "Create key" }));
    await expect.poll(() => page.getByRole("rowheader", { name: /month key/ }).isVisible()).toBe(true);
    const after = Date.now();
    const listed = (await http.get("/v1/api-keys")).body as { name: string; expiresAt: number | null }[];
    const month = listed.find((k) => k.name === "month key")!;
    expect(month.expiresAt).toBeGreaterThanOrEqual(before + 30 * 86_400_000);
    expect(month.expiresAt).toBeLessThanOrEqual(after + 30 * 86_400_000);
    expect(await page.getByRole("rowheader", { name: /month key/ }).textContent()).toContain("expires");
    expect(await page.getByRole("button", { name: "Revoke month key" }).isVisible()).toBe(true);
    // The form is back to a key that never expires.
    expect(await page.getByLabel("Expires").inputValue()).toBe("0");

    const made = await http.post("/v1/api-keys", { type: "svc", name: "brief key", expiresAt: Date.now() + 1_000 });
    expect(made.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await page.reload();
    const row = page.getByRole("row", { name: /brief key/ });
    await expect.poll(() => row.textContent()).toMatch(/expired .*expired /);
    expect(await row.getByRole("button", { name: /Revoke/ }).count()).toBe(0);
    await expectAccessible(page, "keys with an expired one");
  });
});
