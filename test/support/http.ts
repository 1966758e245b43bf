// A small HTTP client for tests: JSON in and out, an optional Bearer key, and a cookie jar for
// dashboard sessions (fetch keeps no cookies of its own).
export interface RequestOptions {
  json?: unknown;
  body?: BodyInit;
  key?: string;
  headers?: Record<string, string>;
  /** Send the cookie jar (default true). */
  cookies?: boolean;
}

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** Prism's proxy answers a request that lacks the operation's declared credentials itself. */
const prismGenerated = (body: unknown) =>
  typeof body === "object" &&
  body !== null &&
  String((body as { type?: unknown }).type ?? "").includes("stoplight.io/prism");

export class Http {
  readonly base: string;
  /**
   * The server behind the proxy. Prism answers some security failures without forwarding
   * (its CLI always checks security); those requests are repeated here so that the server's own
   * answer is what the test sees, and the two statuses must agree.
   */
  readonly direct: string | undefined;
  private cookies = new Map<string, string>();

  constructor(base: string, direct?: string) {
    this.base = base;
    this.direct = direct;
  }

  /** A copy sharing nothing: another browser. */
  fresh(): Http {
    return new Http(this.base, this.direct);
  }

  get sessionCookie(): string | undefined {
    return this.cookies.get("sift_session");
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Reply<T>> {
    const reply = await this.send<T>(this.base, method, path, options);
    if (this.direct && prismGenerated(reply.body)) {
      const server = await this.send<T>(this.direct, method, path, options);
      if (server.status !== reply.status) {
        throw new Error(
          `Prism answered ${method} ${path} with ${reply.status} itself, but the server answers ${server.status}: ${server.text}`,
        );
      }
      return server;
    }
    return reply;
  }

  private async send<T>(base: string, method: string, path: string, options: RequestOptions): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.authorization = `Bearer ${options.key}`;
    if (options.json !== undefined) headers["content-type"] ??= "application/json";
    if (options.cookies !== false && this.cookies.size) {
      headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    }
    const response = await fetch(base + path, {
      method,
      headers,
      body: options.json !== undefined ? JSON.stringify(options.json) : options.body,
      redirect: "manual",
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const [name, ...rest] = pair!.split("=");
      const value = rest.join("=");
      const expired = attrs.some((a) => /max-age=0/i.test(a.trim())) || value === "";
      if (expired) this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value);
    }
    const text = await response.text();
    let body: any = text;
    if (/json/.test(response.headers.get("content-type") ?? "")) body = text ? JSON.parse(text) : undefined;
    return { status: response.status, headers: response.headers, body, text };
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>("GET", path, options);
  post = <T = any>(path: string, json?: unknown, options?: RequestOptions) =>
    this.request<T>("POST", path, { ...options, json });
  put = <T = any>(path: string, json?: unknown, options?: RequestOptions) =>
    this.request<T>("PUT", path, { ...options, json });
  patch = <T = any>(path: string, json?: unknown, options?: RequestOptions) =>
    this.request<T>("PATCH", path, { ...options, json });
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>("DELETE", path, options);
}
