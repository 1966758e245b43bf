// The browser builds of the widget, made in memory with esbuild: the server bundles on demand
// and the build script writes the same output to dist/.
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export interface BundleOptions {
  /** "esm" for `import`, "iife" for one `<script src>` that defines the element. */
  format: "esm" | "iife";
  minify: boolean;
}

export async function bundleWidget(options: BundleOptions): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("./index.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: options.format,
    minify: options.minify,
    platform: "browser",
    // The oldest browsers with everything the widget and the SDK use (AbortSignal.any, ElementInternals).
    target: ["chrome116", "firefox124", "safari17.4"],
    legalComments: "none",
    logLevel: "silent",
  });
  const [file] = result.outputFiles;
  if (!file) throw new Error("esbuild produced no output");
  return file.text;
}
