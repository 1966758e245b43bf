// `sift`: upload files to an index and follow their ingest, check an ingest, search, list keys.
// Every command reads the same two settings (--base-url, --api-key or their SIFT_ variables) and
// exits with the codes in output.ts, so scripts can tell a refusal from a typo from an outage.
import { parseArgs } from "node:util";
import { createClient, SiftApiError, SiftError, SiftUnreachableError } from "@sift/sdk";
import { KEYS_HELP, keys } from "./commands/keys.ts";
import { SEARCH_HELP, search } from "./commands/search.ts";
import { STATUS_HELP, status } from "./commands/status.ts";
import { UPLOAD_HELP, upload } from "./commands/upload.ts";
import { EXIT, UsageError } from "./output.ts";

const COMMON = `
Settings for every command:
  --base-url URL   Sift's address (SIFT_BASE_URL; default http://127.0.0.1:7700)
  --api-key KEY    a key of the index's tenant (SIFT_API_KEY); search also works without one on
                   PUBLIC indexes
  -h, --help       this help

Exit codes: 0 done, 1 Sift refused or the ingest failed, 2 wrong command line, 3 Sift unreachable.`;

const HELP = `usage: sift COMMAND [options]

Commands:
  upload FILE --index NAME      upload a file as a new version and follow its ingest
  status INDEX VERSION          show an upload's ingest
  search QUERY --index NAME --service NAME
                                print an index's suggestions for QUERY
  keys --email ADDRESS          list the tenant's API keys (signs in with your account)

\`sift COMMAND --help\` describes a command.
${COMMON}`;

const COMMANDS: Record<string, string> = {
  upload: UPLOAD_HELP,
  status: STATUS_HELP,
  search: SEARCH_HELP,
  keys: KEYS_HELP,
};

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      index: { type: "string" },
      service: { type: "string" },
      limit: { type: "string" },
      filter: { type: "string" },
      scope: { type: "string" },
      weighted: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      "base-url": { type: "string", default: process.env.SIFT_BASE_URL ?? "http://127.0.0.1:7700" },
      "api-key": { type: "string", default: process.env.SIFT_API_KEY },
      email: { type: "string", default: process.env.SIFT_EMAIL },
      "skip-invalid": { type: "boolean", default: false },
      "no-activate": { type: "boolean", default: false },
      "no-wait": { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, ...rest] = positionals;
  if (command === undefined || command === "help") {
    process.stdout.write(`${HELP}\n`);
    return values.help || command === "help" ? EXIT.ok : EXIT.usage;
  }
  const help = COMMANDS[command];
  if (help === undefined) throw new UsageError(`unknown command "${command}"\n\n${HELP}`);
  if (values.help) {
    process.stdout.write(`${help}\n${COMMON}\n`);
    return EXIT.ok;
  }
  const apiKey = values["api-key"];
  if (command === "keys") {
    process.stdout.write(await keys(values["base-url"]!, values.email, values.json!));
    return EXIT.ok;
  }
  if (!apiKey && command !== "search") throw new UsageError("an API key is required: --api-key or SIFT_API_KEY");
  const sift = createClient({ baseUrl: values["base-url"]!, apiKey });
  switch (command) {
    case "upload":
      await upload(
        sift,
        {
          file: rest[0],
          index: values.index,
          skipInvalid: values["skip-invalid"]!,
          activate: !values["no-activate"],
          wait: !values["no-wait"],
        },
        process.stdout,
        process.stderr,
      );
      return EXIT.ok;
    case "status": {
      const { text, failed } = await status(sift, rest[0], rest[1], values.json!);
      process.stdout.write(text);
      return failed ? EXIT.failed : EXIT.ok;
    }
    default:
      process.stdout.write(
        await search(sift, {
          query: rest.join(" ") || undefined,
          index: values.index,
          service: values.service,
          limit: values.limit,
          weighted: values.weighted!,
          filter: values.filter,
          scope: values.scope,
          json: values.json!,
        }),
      );
      return EXIT.ok;
  }
}

function report(error: unknown): number {
  const say = (text: string) => process.stderr.write(`sift: ${text}\n`);
  if (error instanceof UsageError) {
    say(error.message);
    return EXIT.usage;
  }
  // parseArgs refuses unknown options and missing values with these codes.
  const code = (error as { code?: string }).code;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" || code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    say(`${(error as Error).message} (sift --help)`);
    return EXIT.usage;
  }
  if (error instanceof SiftUnreachableError) {
    say(error.message);
    return EXIT.unreachable;
  }
  if (error instanceof SiftApiError) {
    const fields = error.fieldErrors.map((f) => `\n  ${f.field ?? `line ${f.line}`}: ${f.message}`).join("");
    say(`${error.status}: ${error.message}${fields}`);
    return EXIT.failed;
  }
  if (error instanceof SiftError) {
    say(error.message);
    return EXIT.failed;
  }
  say((error as Error).message);
  return EXIT.failed;
}

process.exitCode = await main(process.argv.slice(2)).catch(report);
