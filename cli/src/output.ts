// What the CLI prints: sizes people read at a glance, a progress line that redraws on a terminal
// and is written every 2 s elsewhere (logs of CI jobs), and the exit codes.

/** 0 done; 1 Sift refused or the ingest failed; 2 the command line is wrong; 3 Sift could not be reached. */
export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3 } as const;

export class UsageError extends Error {}

/** Bytes as a person reads them: 812 B, 14.2 KB, 3.1 MB, 2.40 GB (1 KB = 1024 B). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

export function progressPrinter(stream: NodeJS.WriteStream) {
  const tty = stream.isTTY === true;
  let last = 0;
  let drawn = false;
  return {
    line(label: string, done: number, total: number | undefined, extra = ""): void {
      const now = Date.now();
      if (!tty && now - last < 2_000 && done !== total) return;
      last = now;
      const ratio = total ? Math.min(1, done / total) : 0;
      const bar = total
        ? `[${"#".repeat(Math.round(ratio * 30)).padEnd(30, ".")}] ${(ratio * 100).toFixed(0).padStart(3)}% `
        : "";
      const text = `${label.padEnd(10)} ${bar}${formatBytes(done)}${total ? ` / ${formatBytes(total)}` : ""}${extra}`;
      stream.write(tty ? `\r${text}\x1b[K` : `${text}\n`);
      drawn = tty;
    },
    /** Ends a redrawn line before other output. */
    end(): void {
      if (drawn) stream.write("\n");
      drawn = false;
    },
  };
}

/** A table of plain columns, padded to the widest cell. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
