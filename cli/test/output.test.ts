// What the CLI prints, without a server: sizes and tables people read.
import { expect, test } from "vitest";
import { formatBytes, table } from "../src/output.ts";

test("sizes are shown in the unit that fits, never a small file as 0.0 MB", () => {
  expect(formatBytes(0)).toBe("0 B");
  expect(formatBytes(812)).toBe("812 B");
  expect(formatBytes(1024)).toBe("1.0 KB");
  expect(formatBytes(14_540)).toBe("14.2 KB");
  expect(formatBytes(3.1 * 1024 ** 2)).toBe("3.1 MB");
  expect(formatBytes(2.4 * 1024 ** 3)).toBe("2.40 GB");
});

test("tables pad each column to its widest cell", () => {
  expect(
    table(
      ["id", "type"],
      [
        ["k1", "adm"],
        ["key-22", "srh"],
      ],
    ),
  ).toBe("id      type\nk1      adm\nkey-22  srh");
});
