// Sign-in to the dashboard through a real OpenID Connect provider, in Chromium: the provider's
// button, its login and consent pages, and back to the dashboard signed in. Sift discovers the
// provider, sends PKCE, state and nonce, and validates the ID token (routes/oauth.ts).
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { siftWithTestIdp, type TestIdp } from "../support/oidc.ts";
import type { RunningSift } from "../support/server.ts";
import { launchChromium } from "./support/browser.ts";
import { activate, expectAccessible, tabTo } from "./support/dashboard.ts";

let idp: TestIdp;
let sift: RunningSift;
let browser: Browser;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  let started: { idp: TestIdp; sift: RunningSift };
  [started, browser] = await Promise.all([siftWithTestIdp(), launchChromium()]);
  ({ idp, sift } = started);
});
afterEach(async () => {
  await Promise.all(contexts.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await browser?.close();
  await sift?.stop();
  await idp?.stop();
});

async function open(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  // The provider's development pages ask for a web font; this machine reaches no such site.
  await page.route(/fonts\.googleapis\.com/, (route) => route.abort());
  await page.goto(`${sift.url}/dashboard`);
  return page;
}

/** At the provider: its development login (any name and password), then its consent page. */
async function signInAtProvider(page: Page, login: string): Promise<void> {
  await page.waitForURL((url) => url.origin === idp.issuer);
  await tabTo(page, page.locator("input[name=login]"));
  await page.keyboard.type(login);
  await tabTo(page, page.locator("input[name=password]"));
  await page.keyboard.type("any password");
  await page.keyboard.press("Enter");
  const consent = page.getByRole("button", { name: "Continue" });
  await consent.waitFor();
  await activate(page, consent);
}

test("the provider's button signs a new user in at the provider and lands them in the dashboard", async () => {
  const page = await open();
  const button = page.getByRole("link", { name: "Sign in with Test ID" });
  await button.waitFor();
  await expectAccessible(page, "sign in with a provider");

  const authorize = page.waitForRequest((r) => r.url().startsWith(`${idp.issuer}/auth`));
  await activate(page, button);
  const sent = new URL((await authorize).url());
  // What a certified provider expects of a careful client: PKCE with S256, state, nonce, openid.
  expect(sent.searchParams.get("code_challenge_method")).toBe("S256");
  expect(sent.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);
  expect(sent.searchParams.get("state")).toMatch(/^[\w-]{20,}$/);
  expect(sent.searchParams.get("nonce")).toMatch(/^[\w-]{20,}$/);
  expect(sent.searchParams.get("scope")).toContain("openid");
  expect(sent.searchParams.get("redirect_uri")).toBe(`${sift.url}/v1/auth/oauth/idp/callback`);

  await signInAtProvider(page, "alice");
  await page.waitForURL(`${sift.url}/dashboard`);
  await expect.poll(() => page.locator("main h1").textContent()).toBe("Services and indexes");
  expect(await page.getByText("alice@idp.example").isVisible()).toBe(true);
  await expectAccessible(page, "signed in through the provider");
  expect(idp.errors).toEqual([]);

  // Signing out and in again through the provider is the same account, not a new one.
  await activate(page, page.getByRole("button", { name: "Sign out" }));
  await page.getByRole("link", { name: "Sign in with Test ID" }).waitFor();
  const again = await open();
  await activate(again, again.getByRole("link", { name: "Sign in with Test ID" }));
  await signInAtProvider(again, "alice");
  await expect.poll(() => again.locator("main h1").textContent()).toBe("Services and indexes");
  expect(await again.getByText("alice@idp.example").isVisible()).toBe(true);
});

test("a callback replayed from another browser is refused: the state is bound to the browser that started", async () => {
  const page = await open();
  const callback = page.waitForRequest((r) => r.url().startsWith(`${sift.url}/v1/auth/oauth/idp/callback`));
  await activate(page, page.getByRole("link", { name: "Sign in with Test ID" }));
  await signInAtProvider(page, "bob");
  const url = (await callback).url();
  await page.waitForURL(`${sift.url}/dashboard`);

  // The same code and state, in a browser that did not start this sign-in.
  const other = await browser.newContext();
  contexts.push(other);
  const replay = await (await other.newPage()).goto(url);
  expect(replay?.status()).toBe(400);
  expect(await replay?.json()).toMatchObject({ errors: [{ field: "state" }] });
});

test("an ID token whose claims were changed after signing is refused: back on the sign-in screen with the reason", async () => {
  const page = await open();
  idp.forgeIdTokens = true;
  try {
    await activate(page, page.getByRole("link", { name: "Sign in with Test ID" }));
    await signInAtProvider(page, "carol");
    await page.waitForURL((url) => url.pathname === "/dashboard/signin");
  } finally {
    idp.forgeIdTokens = false;
  }
  await expect.poll(() => page.locator("main h1").textContent()).toBe("Sign in to Sift");
  expect(await page.getByRole("alert").textContent()).toMatch(/Test ID's answer failed validation/);
  await expectAccessible(page, "sign-in refused");
  // No session was made: the API says so too.
  const me = await page.evaluate(() => fetch("/v1/auth/me").then((r) => r.status));
  expect(me).toBe(401);
});

test("cancelling at the provider brings the person back to the sign-in screen, told why", async () => {
  const page = await open();
  await activate(page, page.getByRole("link", { name: "Sign in with Test ID" }));
  await page.waitForURL((url) => url.origin === idp.issuer);
  await activate(page, page.getByRole("link", { name: "[ Cancel ]" }));
  await page.waitForURL((url) => url.pathname === "/dashboard/signin");
  expect(await page.getByRole("alert").textContent()).toBe("Test ID did not sign you in: access_denied");
  await expect.poll(() => page.getByRole("link", { name: "Sign in with Test ID" }).isVisible()).toBe(true);
});
