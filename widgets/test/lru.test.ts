import { expect, test } from "vitest";
import { Lru } from "../src/lru.ts";

test("keeps the most recently used entries and forgets the oldest", () => {
  const lru = new Lru<string, number>(2);
  lru.set("a", 1);
  lru.set("b", 2);
  expect(lru.get("a")).toBe(1); // "a" is now newer than "b"
  lru.set("c", 3);
  expect(lru.get("b")).toBeUndefined();
  expect(lru.get("a")).toBe(1);
  expect(lru.get("c")).toBe(3);
  lru.clear();
  expect(lru.get("a")).toBeUndefined();
});
