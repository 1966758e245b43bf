// `sift status INDEX VERSION`: where an upload's ingest is.
import type { SiftClient } from "@sift/sdk";
import { formatBytes, UsageError } from "../output.ts";
import { errorLines, summary } from "./upload.ts";

export const STATUS_HELP = `usage: sift status INDEX VERSION [--json]

Shows the ingest of an uploaded version: its state, bytes read, records ingested, and the first
line-numbered errors. Exits 1 when the ingest failed.`;

export async function status(sift: SiftClient, index: string | undefined, version: string | undefined, json: boolean) {
  if (!index || !version) throw new UsageError(STATUS_HELP);
  const s = await sift.uploads.status(index, version);
  if (json) return { text: `${JSON.stringify(s, null, 2)}\n`, failed: s.state === "failed" };
  const lines = [
    `${index} version ${version}: ${s.state}`,
    `  read ${formatBytes(s.bytesRead)} of ${formatBytes(s.bytesReceived)}; ${summary(s)}`,
    ...(s.failureReason ? [`  failed: ${s.failureReason}`] : []),
    ...errorLines(s),
  ];
  return { text: `${lines.join("\n")}\n`, failed: s.state === "failed" };
}
