// The start's resolve hook (module-hooks.ts, D-327): drizzle-orm's own relative imports resolve to
// the file Node itself would pick, as ES modules, without asking Node; every other import is left
// to Node.
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { describe, expect, test } from "vitest";
import { resolveWithinDrizzle } from "../../src/module-hooks.ts";

type Next = Parameters<typeof resolveWithinDrizzle>[2];

const pgCore = pathToFileURL(createRequire(import.meta.url).resolve("drizzle-orm/pg-core")).href.replace(
  /\.cjs$/,
  ".js",
);

describe("the start's resolve hook", () => {
  test("resolves drizzle-orm's relative imports itself, to the file Node resolves", () => {
    let asked = 0;
    const next: Next = () => {
      asked++;
      return { url: "file:///never", format: "module" };
    };
    const resolved = resolveWithinDrizzle(
      "../entity.js",
      { parentURL: pgCore, conditions: [], importAttributes: {} },
      next,
    );
    expect(asked).toBe(0);
    expect(resolved).toMatchObject({ format: "module", shortCircuit: true });
    expect(resolved.url).toBe(import.meta.resolve("drizzle-orm").replace(/index\.js$/, "entity.js"));
  });

  test("leaves every other import to Node", () => {
    const asked: string[] = [];
    const next: Next = (specifier) => {
      asked.push(specifier);
      return { url: `node:${specifier}`, format: "builtin" };
    };
    const context = (parentURL: string) => ({ parentURL, conditions: [], importAttributes: {} });
    resolveWithinDrizzle("drizzle-orm", context(import.meta.url), next);
    resolveWithinDrizzle("./sql.js", context(import.meta.url), next);
    resolveWithinDrizzle("postgres", context(pgCore), next);
    resolveWithinDrizzle("./index.cjs", context(pgCore.replace(/\.js$/, ".cjs")), next);
    expect(asked).toEqual(["drizzle-orm", "./sql.js", "postgres", "./index.cjs"]);
  });
});
