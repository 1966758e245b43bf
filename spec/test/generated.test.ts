// The committed contract output must equal a fresh generation: the contract cannot drift from
// the TypeSpec sources, and nobody edits generated/ by hand.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, expect, test } from "vitest";

const specDir = resolve(import.meta.dirname, "..");
const committed = resolve(specDir, "../generated");

// One generation serves every case, made by whichever case asks first: a case run alone (`-t`)
// or in any order (`--sequence.shuffle`) still finds the fresh files.
let fresh: string | undefined;
function freshGeneration(): string {
  if (fresh === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "sift-generate-"));
    execFileSync(process.execPath, ["scripts/generate.ts", "--out", dir], { cwd: specDir, stdio: "pipe" });
    fresh = dir;
  }
  return fresh;
}
afterAll(() => {
  if (fresh !== undefined) rmSync(fresh, { recursive: true, force: true });
});

test.each(["openapi.yaml", "openapi.json", "types.d.ts"])("generated/%s is what `npm run generate` writes", (file) => {
  const expected = readFileSync(join(freshGeneration(), file), "utf8");
  const actual = readFileSync(join(committed, file), "utf8");
  expect(actual === expected, `generated/${file} is stale: run \`npm run generate\` and commit the result`).toBe(true);
});

test("the contract is OpenAPI 3.1 and declares its security schemes (an MCP host's OAuth token on /mcp)", () => {
  const doc = JSON.parse(readFileSync(join(committed, "openapi.json"), "utf8"));
  expect(doc.openapi).toBe("3.1.0");
  expect(Object.keys(doc.components.securitySchemes).sort()).toEqual([
    "ApiKeyBearer",
    "McpAccessToken",
    "SessionCookie",
  ]);
});

test("the @sift/contract package's version is the contract's info.version", () => {
  const doc = JSON.parse(readFileSync(join(committed, "openapi.json"), "utf8"));
  const pkg = JSON.parse(readFileSync(join(committed, "package.json"), "utf8"));
  expect(pkg.name).toBe("@sift/contract");
  expect(pkg.version).toBe(doc.info.version);
});
