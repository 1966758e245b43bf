// A resolve hook for the server's start (main.ts). Node 24 gives each ES module it resolves a
// format from its package's package.json, and in doing so parses that package's whole `exports`
// map again, every time. drizzle-orm's map is 179 KB, and the store loads about a hundred of its
// modules: some 600 ms of a start that took about 2 s (D-327). Within drizzle-orm every import is
// relative and every module is ESM (`"type": "module"`, `.js`), so its imports are resolved here
// without that lookup. Imports of drizzle-orm itself, and every other module, go to Node as usual.
import module from "node:module";

const DRIZZLE = "/node_modules/drizzle-orm/";

type Resolve = NonNullable<Parameters<typeof module.registerHooks>[0]["resolve"]>;

export const resolveWithinDrizzle: Resolve = (specifier, context, next) => {
  const parent = context.parentURL;
  if (
    parent?.startsWith("file:") &&
    parent.includes(DRIZZLE) &&
    parent.endsWith(".js") &&
    (specifier.startsWith("./") || specifier.startsWith("../")) &&
    specifier.endsWith(".js")
  ) {
    return { url: new URL(specifier, parent).href, format: "module", shortCircuit: true };
  }
  return next(specifier, context);
};

/** Registers the hook on this thread (Node 22.15 and later; without it the start is only slower). */
export function registerModuleHooks(): void {
  module.registerHooks?.({ resolve: resolveWithinDrizzle });
}
