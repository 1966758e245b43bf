// npm run build -w @sift/widgets: writes dist/sift-autocomplete.js (ESM) and
// dist/sift-autocomplete.iife.js (one script tag), and prints their min+gzip sizes.
import { mkdirSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { bundleWidget } from "../src/bundle.ts";

const dist = new URL("../dist/", import.meta.url);
mkdirSync(dist, { recursive: true });
for (const [format, name] of [
  ["esm", "sift-autocomplete.js"],
  ["iife", "sift-autocomplete.iife.js"],
] as const) {
  const code = await bundleWidget({ format, minify: true });
  writeFileSync(new URL(name, dist), code);
  const kb = (n: number) => `${(n / 1024).toFixed(1)} kB`;
  console.log(`dist/${name}: ${kb(code.length)} min, ${kb(gzipSync(code).length)} min+gzip`);
}
