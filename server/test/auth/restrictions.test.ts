// The matching rules of API key restrictions (docs/api-keys.md, Restrictions), case by case.
import { describe, expect, test } from "vitest";
import {
  checkRestrictions,
  indexPatternMatches,
  originMatches,
  parseOriginPattern,
  requestOrigin,
} from "../../src/auth/restrictions.ts";

describe("index patterns", () => {
  test.each([
    ["products", "products", true],
    ["products", "products2", false],
    ["dev_*", "dev_products", true],
    ["dev_*", "dev_", true],
    ["dev_*", "prod_dev_x", false],
    ["*_products", "eu_products", true],
    ["eu*products", "eu-shop-products", true],
    ["eu*products", "euproducts", true],
    ["ab*ba", "aba", false],
    ["a*b*c", "a-c-b-c", true],
    ["a*b*c", "a-c-c", false],
    ["*b*", "abc", true],
    ["**", "", true],
    ["*", "anything", true],
    // Only `*` is special: a dot is a dot.
    ["a.b", "aXb", false],
    ["a.b*", "a.bc", true],
    // Names are case-sensitive.
    ["Dev_*", "dev_x", false],
  ])("%s against %s: %s", (pattern, name, expected) => {
    expect(indexPatternMatches(pattern, name)).toBe(expected);
  });
});

describe("origin patterns", () => {
  test.each([
    ["https://shop.example.com", "https://shop.example.com", true],
    ["https://shop.example.com", "http://shop.example.com", false],
    ["https://shop.example.com", "https://shop.example.com:8443", false],
    ["http://localhost:3000", "http://localhost:3000", true],
    ["https://*.example.com", "https://a.example.com", true],
    ["https://*.example.com", "https://a.b.example.com", true],
    ["https://*.example.com", "https://example.com", false],
    ["https://*.example.com", "https://evilexample.com", false],
    ["https://*.example.com", "http://a.example.com", false],
    ["https://*.example.com", "https://a.example.com.evil.net", false],
  ])("%s against %s: %s", (pattern, origin, expected) => {
    expect(originMatches(pattern, origin)).toBe(expected);
  });

  test("patterns are lower-cased; paths, other schemes and bare hosts are refused", () => {
    expect(parseOriginPattern("HTTPS://Shop.Example.com")).toEqual({ ok: true, origin: "https://shop.example.com" });
    expect(parseOriginPattern("https://*.example.com:8443")).toEqual({
      ok: true,
      origin: "https://*.example.com:8443",
    });
    for (const bad of [
      "shop.example.com",
      "ftp://shop.example.com",
      "https://shop.example.com/",
      "https://shop.example.com/x",
      "https://sh*p.example.com",
      "https://*",
      "https://*.com",
      "*",
      "https://shop.example.com:99999",
      "https://user@shop.example.com",
    ]) {
      expect(parseOriginPattern(bad), bad).toMatchObject({ ok: false });
    }
  });

  test("the request's origin is its Origin header, else its Referer's origin", () => {
    expect(requestOrigin("https://Shop.example.com", "https://other.example/x")).toBe("https://shop.example.com");
    expect(requestOrigin(undefined, "https://shop.example.com:8443/a/b?c=d")).toBe("https://shop.example.com:8443");
    expect(requestOrigin(undefined, "not a url")).toBe("null");
    expect(requestOrigin(undefined, undefined)).toBeUndefined();
  });
});

describe("checkRestrictions", () => {
  const now = 1_795_000_000_000;
  test("an unrestricted key has every restriction null; duplicates are dropped", () => {
    expect(checkRestrictions({ type: "svc" }, now)).toEqual({ expiresAt: null, indexes: null, referrers: null });
    expect(
      checkRestrictions({ type: "srh", indexes: ["a", "a"], referrers: ["https://x.io", "HTTPS://X.io"] }, now),
    ).toMatchObject({ indexes: ["a"], referrers: ["https://x.io"] });
  });

  test("expiresAt must lie in the future", () => {
    expect(() => checkRestrictions({ type: "svc", expiresAt: now }, now)).toThrow(/expiresAt: must be in the future/);
    expect(checkRestrictions({ type: "svc", expiresAt: now + 1 }, now).expiresAt).toBe(now + 1);
  });
});
