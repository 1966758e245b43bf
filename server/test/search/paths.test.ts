// The `facets` and `sort` parameters: paths spelled as in filters, errors naming the parameter
// and the character where reading stopped.
import { describe, expect, test } from "vitest";
import { InvalidArgumentError } from "../../src/domain/errors.ts";
import { parseFacets, parseSort } from "../../src/search/paths.ts";

const failure = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    return error as InvalidArgumentError;
  }
  throw new Error("expected a failure");
};

test("a quoted name that is not valid JSON is a 400 naming the parameter, not a crash", () => {
  expect(failure(() => parseFacets('data.a, data."\\x"')).message).toMatch(
    /^facets: at character 14: expected a JSON string/,
  );
  expect(failure(() => parseSort('data."\\x":asc')).message).toMatch(/^sort: at character 6: expected a JSON string/);
});

describe("parseFacets", () => {
  test("comma-separated paths, keyed as spelled and trimmed; quoted names may hold commas and dots", () => {
    expect(parseFacets(' data.brand , data.specs.color,data."a,b".c ')).toEqual([
      { key: "data.brand", path: ["brand"] },
      { key: "data.specs.color", path: ["specs", "color"] },
      { key: 'data."a,b".c', path: ["a,b", "c"] },
    ]);
    expect(parseFacets("data.prix_é,data.$x-1")).toEqual([
      { key: "data.prix_é", path: ["prix_é"] },
      { key: "data.$x-1", path: ["$x-1"] },
    ]);
    expect(parseFacets("  ")).toEqual([]);
  });

  test("a malformed list says where, and names facets", () => {
    const bad = failure(() => parseFacets("data.brand,brand"));
    expect(bad.fields).toEqual([{ field: "facets", message: expect.stringContaining("at character 12") }]);
    expect(bad.message).toMatch(/^facets: at character 12: expected a field path starting with data\./);
    expect(failure(() => parseFacets("data.brand data.x")).message).toContain("at character 12: expected , between");
    expect(failure(() => parseFacets("data.")).message).toContain("at character 6: expected a field name");
    expect(failure(() => parseFacets("data.a,")).message).toContain("at character 8");
  });

  test("at most 10 paths, none twice", () => {
    const eleven = Array.from({ length: 11 }, (_, i) => `data.f${i}`).join(",");
    expect(parseFacets(eleven.split(",").slice(0, 10).join(","))).toHaveLength(10);
    expect(failure(() => parseFacets(eleven)).fields).toEqual([
      { field: "facets", message: "at most 10 paths (got 11)" },
    ]);
    expect(failure(() => parseFacets("data.a,data.a")).message).toBe("facets: data.a is given twice");
  });
});

describe("parseSort", () => {
  test("a path and a direction", () => {
    expect(parseSort("data.price:asc")).toEqual({ path: ["price"], direction: "asc" });
    expect(parseSort(' data."a:b".n:desc ')).toEqual({ path: ["a:b", "n"], direction: "desc" });
  });

  test("anything else names sort and says what was expected where", () => {
    expect(failure(() => parseSort("data.price")).message).toBe(
      "sort: at character 11: expected :asc or :desc after the path, found the end",
    );
    expect(failure(() => parseSort("data.price:up")).message).toContain("at character 11");
    expect(failure(() => parseSort("price:asc")).fields[0]!.field).toBe("sort");
    expect(failure(() => parseSort("data.price:asc,data.x:desc")).message).toContain("at character 11");
  });
});
