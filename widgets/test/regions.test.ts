import { expect, test } from "vitest";
import { regionsOf } from "../src/regions.ts";

test("the regions attribute: discover, id=url pairs, or nothing", () => {
  expect(regionsOf("discover")).toBe("discover");
  expect(regionsOf(" discover ")).toBe("discover");
  expect(
    regionsOf("london=https://lon.example/sift?x=1, tokyo=https://tyo.example\n  mumbai=http://10.0.0.3:7700"),
  ).toEqual([
    { id: "london", url: "https://lon.example/sift?x=1" },
    { id: "tokyo", url: "https://tyo.example" },
    { id: "mumbai", url: "http://10.0.0.3:7700" },
  ]);
  expect(regionsOf("stray london=https://lon.example")).toEqual([{ id: "london", url: "https://lon.example" }]);
  for (const absent of [null, "", "   "]) expect(regionsOf(absent)).toBeUndefined();
});
