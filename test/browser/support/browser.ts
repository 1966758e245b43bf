// Debian's Chromium driven by playwright-core, and a way to put pages on the real server's origin
// without touching the server: the browser asks, the test answers (page.route). Same origin means
// the widget's searches need no CORS and go, unintercepted, to the real Sift.
import { chromium, type Browser, type Page } from "playwright-core";

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}

/** Answers a request for an absolute URL, e.g. a Hono app's `request`. */
export type Responder = (url: string, init: RequestInit) => Response | Promise<Response>;

/**
 * Answers the browser's requests for `origin` + one of `prefixes` with `respond`; every other
 * request goes to the network as usual.
 */
export async function serveAt(page: Page, origin: string, prefixes: string[], respond: Responder): Promise<void> {
  await page.route(
    (url) => url.origin === origin && prefixes.some((p) => url.pathname.startsWith(p)),
    async (route) => {
      const response = await respond(route.request().url(), { headers: await route.request().allHeaders() });
      await route.fulfill({
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: Buffer.from(await response.arrayBuffer()),
      });
    },
  );
}
