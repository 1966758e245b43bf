import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { mapFile, mmapUnavailable } from "../index.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sift-mmap-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("mapFile", () => {
  it("is built on this machine (npm ci compiles the addon)", () => {
    expect(mmapUnavailable).toBeNull();
  });

  it("maps a file's bytes, readable after the descriptor is closed and the file removed", () => {
    const file = path.join(dir, "a.bin");
    const values = Uint32Array.from([7, 0xffff_ffff, 42, 2 ** 31]);
    fs.writeFileSync(file, new Uint8Array(values.buffer));
    const fd = fs.openSync(file, "r");
    const buffer = mapFile(fd, values.byteLength)!;
    fs.closeSync(fd);
    fs.rmSync(file);
    expect(buffer.byteLength).toBe(16);
    expect([...new Uint32Array(buffer)]).toEqual([...values]);
    expect([...new Uint32Array(buffer, 8, 2)]).toEqual([42, 2 ** 31]);
  });

  it("maps an empty file as an empty buffer", () => {
    const file = path.join(dir, "empty.bin");
    fs.writeFileSync(file, "");
    const fd = fs.openSync(file, "r");
    expect(mapFile(fd, 0)!.byteLength).toBe(0);
    fs.closeSync(fd);
  });

  it("maps files larger than 4 GiB without reading them", () => {
    const file = path.join(dir, "sparse.bin");
    const size = 5 * 1024 ** 3;
    fs.writeFileSync(file, "");
    fs.truncateSync(file, size);
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, Buffer.from([9]), 0, 1, size - 1);
    const buffer = mapFile(fd, size)!;
    fs.closeSync(fd);
    const bytes = new Uint8Array(buffer);
    expect(bytes.length).toBe(size);
    expect(bytes[size - 1]).toBe(9);
    expect(bytes[0]).toBe(0);
  });

  it("rejects a bad descriptor with an error, not a crash", () => {
    expect(() => mapFile(987654, 16)).toThrow(/mmap/);
  });
});
