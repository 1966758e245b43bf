import { gzipSync } from "node:zlib";
import { expect, test } from "vitest";
import { bundleWidget } from "../src/bundle.ts";

const BUDGET_BYTES = 15 * 1024;

test("the one-script-tag build, SDK included, stays within 15 kB min+gzip", async () => {
  const code = await bundleWidget({ format: "iife", minify: true });
  const size = gzipSync(code).length;
  expect(size, `${size} bytes min+gzip`).toBeLessThanOrEqual(BUDGET_BYTES);
  // It defines the element by itself and carries no import of its own.
  expect(code).toContain('"sift-autocomplete"');
  expect(code).not.toMatch(/\bimport\s*[({"']/);
});

test("the ESM build exports the element class for pages that extend or register it", async () => {
  const code = await bundleWidget({ format: "esm", minify: false });
  expect(code).toMatch(/export\s*\{[^}]*\bSiftAutocomplete\b/);
});
