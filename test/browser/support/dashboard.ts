// Driving the dashboard as a keyboard user would: Tab until the control has focus (failing if
// Tab never reaches it), then keys. And axe-core on the page as it is.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Locator, Page } from "playwright-core";
import { expect } from "vitest";

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Presses Tab until `target` (or an element inside it, such as the widget's input) has focus. */
export async function tabTo(page: Page, target: Locator, maxPresses = 80): Promise<void> {
  await target.waitFor();
  for (let i = 0; i < maxPresses; i++) {
    if (await target.evaluate((el) => el.matches(":focus, :focus-within"))) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`Tab never reached ${target}`);
}

/** Tab to the control, then press Enter (links, buttons, and inputs that submit their form). */
export async function activate(page: Page, target: Locator, key = "Enter"): Promise<void> {
  await tabTo(page, target);
  await page.keyboard.press(key);
}

/** Axe-core's violations on the page, as readable lines (empty when there are none). */
export async function axeViolations(page: Page, screen: string): Promise<string[]> {
  // evaluate, not a script tag: the dashboard's CSP rightly refuses inline scripts.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const result = await page.evaluate(() =>
    (
      window as unknown as {
        axe: {
          run(): Promise<{ violations: { id: string; help: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe.run(),
  );
  return result.violations.map(
    (v) => `${screen}: ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
  );
}

export async function expectAccessible(page: Page, screen: string): Promise<void> {
  expect(await axeViolations(page, screen)).toEqual([]);
}

/** Follows a link of the dashboard by keyboard; the new screen puts focus on its heading. */
export async function follow(page: Page, link: Locator): Promise<void> {
  await activate(page, link);
  await expect.poll(() => page.evaluate(() => document.activeElement?.matches("main h1") ?? false)).toBe(true);
}
