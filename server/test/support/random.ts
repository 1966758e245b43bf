// The tests' one pseudo-random generator: seeded and deterministic, so generated data is the same
// on every run and a failing case can be replayed from its seed.

/** A deterministic pseudo-random sequence in [0, 1) (mulberry32). */
export function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
