// Certificates from a private CA, made with openssl for tests that need TLS on loopback: a
// server's for 127.0.0.1 and localhost, and a client's for mutual TLS.
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const OPENSSL = "/usr/bin/openssl";
export const opensslAvailable = existsSync(OPENSSL);

export interface Certificates {
  /** The CA's certificate (PEM): what a client is told to trust. */
  ca: string;
  server: { cert: string; key: string };
  client: { cert: string; key: string };
}

/** A CA, and the certificates it signed, as files in `dir`. */
export function certificates(dir: string): Certificates {
  const run = (...args: string[]) => execFileSync(OPENSSL, args, { cwd: dir, stdio: "ignore" });
  run(
    ...["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Sift test CA"],
    ...["-keyout", "ca.key", "-out", "ca.pem"],
  );
  for (const [name, extension] of [
    ["server", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
    ["client", "extendedKeyUsage=clientAuth"],
  ] as const) {
    run(
      ...["req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${name}`],
      ...["-keyout", `${name}.key`, "-out", `${name}.csr`],
    );
    writeFileSync(join(dir, `${name}.ext`), `${extension}\n`);
    run(
      ...["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"],
      ...["-days", "2", "-extfile", `${name}.ext`, "-out", `${name}.pem`],
    );
  }
  return {
    ca: join(dir, "ca.pem"),
    server: { cert: join(dir, "server.pem"), key: join(dir, "server.key") },
    client: { cert: join(dir, "client.pem"), key: join(dir, "client.key") },
  };
}
