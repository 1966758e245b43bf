// The dashboard is served by Sift at /dashboard/ (server/src/routes/dashboard.ts), so every asset
// URL is built under that base. JSX is Preact's automatic runtime, compiled by Vite's own
// transformer: no Babel preset needed.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/dashboard/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    target: "es2022",
    outDir: "dist",
    // Every browser that runs the dashboard supports modulepreload; the polyfill is dead weight.
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
  },
  server: { proxy: { "/v1": "http://127.0.0.1:7700", "/widget": "http://127.0.0.1:7700" } },
});
