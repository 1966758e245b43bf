import { describe, expect, test } from "vitest";
import { highlight } from "../src/highlight.ts";

/** The title with the marked pieces in [brackets]. */
const marked = (title: string, ranges?: [number, number][]) =>
  highlight(title, ranges)
    .map((s) => (s.match ? `[${s.text}]` : s.text))
    .join("");

describe("highlight draws the server's ranges", () => {
  test("marks each range of the title, keeping the title's own spelling", () => {
    expect(marked("Paris", [[0, 3]])).toBe("[Par]is");
    expect(marked("Zürich", [[0, 3]])).toBe("[Zür]ich");
    expect(
      marked("São Paulo", [
        [0, 3],
        [4, 5],
      ]),
    ).toBe("[São] [P]aulo");
    expect(marked("New York", [[4, 8]])).toBe("New [York]");
  });

  test("ranges count UTF-16 units, as JavaScript strings do", () => {
    expect(marked("𝐁oston", [[0, 3]])).toBe("[𝐁o]ston");
    expect(marked("תל אביב", [[0, 2]])).toBe("[תל] אביב");
  });

  test("no ranges (a match in data, or a server that sent none): the title unmarked", () => {
    expect(marked("Eiffel Tower")).toBe("Eiffel Tower");
    expect(marked("Eiffel Tower", [])).toBe("Eiffel Tower");
    expect(highlight("", [[0, 1]])).toEqual([]);
  });

  test("ranges out of order, overlapping, empty or past the end are skipped or cut, never thrown on", () => {
    expect(
      marked("Paris", [
        [3, 5],
        [0, 2],
      ]),
    ).toBe("Par[is]");
    expect(
      marked("Paris", [
        [0, 3],
        [2, 4],
      ]),
    ).toBe("[Par][i]s");
    expect(
      marked("Paris", [
        [1, 1],
        [4, 99],
      ]),
    ).toBe("Pari[s]");
    expect(marked("Paris", [[-2, 1]])).toBe("[P]aris");
  });
});
