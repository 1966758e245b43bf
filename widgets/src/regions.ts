// The `regions` attribute, read into the SDK's `regions` option so the widget fails over between
// regions as the SDK does (docs/DECISIONS.md, D-252).
import type { RegionEndpoint } from "@sift/sdk/search";

/**
 * `discover` (ask `base-url` for GET /v1/regions) or `id=url` pairs separated by spaces or commas;
 * absent or empty, every search goes to `base-url`. A pair without `=` is ignored.
 */
export function regionsOf(value: string | null): RegionEndpoint[] | "discover" | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (text === "discover") return "discover";
  const pairs = text.split(/[\s,]+/).filter((pair) => pair.includes("="));
  return pairs.map((pair) => ({ id: pair.slice(0, pair.indexOf("=")), url: pair.slice(pair.indexOf("=") + 1) }));
}
