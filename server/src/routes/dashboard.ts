// GET /dashboard and everything under it: the dashboard's single-page app, as the
// @sift/dashboard package builds it (dashboard/dist). Hashed assets are cached for good; every
// other path under /dashboard answers index.html, so the app's own URLs survive a reload.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Context, Hono } from "hono";
import { UnavailableError } from "../domain/errors.ts";
import type { AppEnv } from "../http/env.ts";

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
};

// The page runs only its own scripts and talks only to this origin; styles may be inline
// (Preact's style attributes, the widget's shadow styles); images may come from any https site
// (records' thumbnails in the widget); no site may frame it.
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: https:; " +
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

export function dashboardDist(): string {
  return join(dirname(createRequire(import.meta.url).resolve("@sift/dashboard/package.json")), "dist");
}

export function mountDashboard(app: Hono<AppEnv>, options: { dist?: string } = {}): void {
  const dist = options.dist ?? dashboardDist();
  const files = new Map<string, Promise<Buffer>>();
  const read = (name: string) => {
    let file = files.get(name);
    if (!file) {
      file = readFile(join(dist, name));
      // A failed read (not built yet, or no such asset) is tried again next time, not cached.
      file.catch(() => files.delete(name));
      files.set(name, file);
    }
    return file;
  };

  app.get("/dashboard/assets/:file", async (c) => {
    const name = c.req.param("file");
    const type = TYPES[name.split(".").pop() ?? ""];
    if (!type || !/^[\w.-]+$/.test(name)) return c.notFound();
    // biome-ignore lint/plugin: a file that cannot be read is a missing asset, answered 404.
    const body = await read(`assets/${name}`).catch(() => undefined);
    if (!body) return c.notFound();
    // Vite puts a content hash in every asset's name: a new build is a new URL.
    return c.body(new Uint8Array(body), 200, {
      "content-type": type,
      "cache-control": "public, max-age=31536000, immutable",
      "x-content-type-options": "nosniff",
    });
  });

  const page = async () => {
    const html = await read("index.html").catch(() => {
      throw new UnavailableError("the dashboard is not built: run `npm run build` (npm ci and npm start build it)");
    });
    return html;
  };
  const answer = async (c: Context<AppEnv>) =>
    c.body(new Uint8Array(await page()), 200, {
      "content-type": "text/html; charset=utf-8",
      // The page names the current build's assets: always ask whether it changed.
      "cache-control": "no-cache",
      ...SECURITY_HEADERS,
    });
  app.get("/dashboard", answer);
  app.get("/dashboard/*", answer);
}
