#!/usr/bin/env node
// Runs TypeScript 7's tsc with this command's arguments. TypeScript 7 is a dependency of this
// package alone: at the root it would claim the `tsc` command that the builds and the tools
// needing TypeScript 5's JavaScript API (openapi-typescript) expect to be 5.9 (D-315).
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const root = dirname(createRequire(import.meta.url).resolve("typescript/package.json"));
// tsc.js reads its arguments from process.argv, which are this command's.
await import(pathToFileURL(join(root, "lib", "tsc.js")).href);
