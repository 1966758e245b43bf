// The part of autocannon's API the HTTP benchmark uses (the package ships no types).
declare module "autocannon" {
  namespace autocannon {
    interface Histogram {
      average: number;
      p50: number;
      p99: number;
      max: number;
      total: number;
    }
    interface Result {
      requests: Histogram;
      latency: Histogram;
      non2xx: number;
      errors: number;
      timeouts: number;
    }
    interface Options {
      url: string;
      connections?: number;
      duration?: number;
      requests?: { method?: "GET" | "POST" | "PUT" | "DELETE"; path: string; body?: string }[];
    }
    interface Instance {
      stop(): void;
    }
    function track(instance: Instance, options?: { renderProgressBar?: boolean; renderResultsTable?: boolean }): void;
  }
  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void,
  ): autocannon.Instance;
  export default autocannon;
}
