// Takes the README's screenshots of the dashboard: `node test/browser/dashboard-screenshots.ts`
// (after `npm run build`). A real Sift on a temporary data dir, driven in Debian's Chromium.
import { join } from "node:path";
import { startSift } from "../support/server.ts";
import { launchChromium } from "./support/browser.ts";

const out = join(import.meta.dirname, "../../docs");
const sift = await startSift({
  SIFT_OAUTH_PROVIDERS: "github",
  SIFT_OAUTH_GITHUB_CLIENT_ID: "example",
  SIFT_OAUTH_GITHUB_CLIENT_SECRET: "example",
});
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  const shot = async (name: string) => {
    // The caret and focus ring move between runs; screenshots should not.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.screenshot({ path: join(out, `dashboard-${name}.png`), fullPage: true });
  };
  await page.goto(`${sift.url}/dashboard/signin`);
  await page.getByRole("link", { name: "Sign in with GitHub" }).waitFor();
  await shot("sign-in");

  await page.goto(`${sift.url}/dashboard/signup`);
  await page.getByLabel("E-mail").fill("ana@shop.example");
  await page.getByLabel("Password").fill("correct horse battery");
  await page.getByRole("button", { name: "Create account" }).click();
  await page.getByLabel("Service name").fill("shop");
  await page.getByRole("button", { name: "Create service" }).click();
  await page.getByRole("rowheader", { name: "shop" }).waitFor();
  for (const [name, visibility] of [
    ["products", "PUBLIC"],
    ["orders", "PRIVATE"],
  ] as const) {
    if (!(await page.getByLabel("Index name").isVisible())) await page.getByText("Create an index").click();
    await page.getByLabel("Index name").fill(name);
    await page.locator(`input[name=visibility][value=${visibility}]`).check();
    await page.getByRole("button", { name: "Create index" }).click();
    await page.getByRole("link", { name }).waitFor();
  }
  await shot("catalog");

  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Name", { exact: true }).fill("shop search");
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByLabel("The new key").waitFor();
  await shot("keys");

  await page.goto(`${sift.url}/dashboard/indexes/products/upload`);
  const rows = ["id,title,weight,color", "hose-1,Garden hose,40,green", "rake-1,Garden rake,25,red"];
  for (let i = 0; i < 120; i++)
    rows.push(`item-${i},${["Watering can", "Flower pot", "Seed tray"][i % 3]} ${i},${i + 1},blue`);
  rows.push("bad-1,,3,blue", "bad-2,Trowel,-1,grey");
  await page.getByLabel(/Skip invalid lines/).check();
  await page.locator("#upload-file").setInputFiles({
    name: "products.csv",
    mimeType: "text/csv",
    buffer: Buffer.from(rows.join("\n")),
  });
  await page.getByText("Ingested products.csv").waitFor({ timeout: 30_000 });
  await shot("upload");

  await page.getByRole("link", { name: "Records", exact: true }).click();
  await page.locator("#record-search").click();
  await page.keyboard.type("garden h");
  await page.locator("sift-autocomplete [role=option]").first().waitFor();
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("Enter");
  await page.getByLabel("The record as JSON").waitFor();
  await shot("record");

  await page.getByLabel("The record as JSON").fill('{ "title": "Garden hose, 25 m", "weight": 41 }');
  await page.getByRole("button", { name: "Save record" }).click();
  await page.waitForFunction(() => document.querySelector("[data-testid=active-version]")?.textContent !== "1");
  await page.getByRole("link", { name: "Versions", exact: true }).click();
  await page.getByText("Updated record hose-1").waitFor();
  // The upload's list of changed records, open.
  await page.getByText(/changed records of version 1$/).click();
  await page.locator(".changed-records li").first().waitFor();
  await shot("versions");

  await page.getByRole("link", { name: "Use it", exact: true }).click();
  await page.getByRole("button", { name: "Copy widget snippet" }).waitFor();
  await shot("use-it");
} finally {
  await browser.close();
  await sift.stop();
}
